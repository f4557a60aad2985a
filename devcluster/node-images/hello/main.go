// A tiny workload for node tests: HTTP on :8080 (or $PORT), / answers a greeting,
// /healthz answers ok (for readiness probes), /get?url=U fetches U from inside the Pod (its
// resolv.conf: the cluster DNS, the Pod's search path) and answers its body, /burn?ms=N
// keeps a CPU busy for N ms (for HPAs on CPU utilisation), /queue answers
// {"queue":{"depth":N}} and POST /queue?depth=N sets N (a source for ExternalMetrics); logs one line per / request;
// exits on SIGTERM. With $LOAD_URL set it is also a load generator: it GETs that URL
// $LOAD_EVERY_MS apart (default 100), each request in its own goroutine.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	client := &http.Client{Timeout: 5 * time.Second}
	mux.HandleFunc("/get", func(w http.ResponseWriter, r *http.Request) {
		res, err := client.Get(r.URL.Query().Get("url"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	})
	mux.HandleFunc("/burn", func(w http.ResponseWriter, r *http.Request) {
		ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
		if err != nil || ms < 0 || ms > 10000 {
			http.Error(w, "ms: an integer from 0 to 10000", http.StatusBadRequest)
			return
		}
		n := 0
		for end := time.Now().Add(time.Duration(ms) * time.Millisecond); time.Now().Before(end); {
			n++
		}
		fmt.Fprintf(w, "burnt %d ms (%d loops)\n", ms, n)
	})
	var depth atomic.Int64
	mux.HandleFunc("/queue", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			n, err := strconv.ParseInt(r.URL.Query().Get("depth"), 10, 64)
			if err != nil || n < 0 {
				http.Error(w, "depth: a non-negative integer", http.StatusBadRequest)
				return
			}
			depth.Store(n)
			log.Printf("queue depth set to %d", n)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "{\"queue\":{\"depth\":%d}}\n", depth.Load())
	})
	if url := os.Getenv("LOAD_URL"); url != "" {
		every, err := strconv.Atoi(os.Getenv("LOAD_EVERY_MS"))
		if err != nil || every <= 0 {
			every = 100
		}
		go load(client, url, time.Duration(every)*time.Millisecond)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		log.Printf("request %s %s from %s", r.Method, r.URL.Path, r.RemoteAddr)
		fmt.Fprintf(w, "hello from %s\n", host)
	})
	srv := &http.Server{Addr: ":" + port, Handler: mux}
	go func() {
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
		<-sigs
		log.Printf("terminating")
		srv.Shutdown(context.Background())
	}()
	log.Printf("hello listening on :%s", port)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
}

// load GETs url every period, without waiting for the answers, and logs a count every 10 s.
func load(client *http.Client, url string, period time.Duration) {
	var sent, failed atomic.Int64
	go func() {
		for range time.Tick(10 * time.Second) {
			log.Printf("load: %d sent, %d failed", sent.Load(), failed.Load())
		}
	}()
	for range time.Tick(period) {
		sent.Add(1)
		go func() {
			res, err := client.Get(url)
			if err != nil {
				failed.Add(1)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}()
	}
}
