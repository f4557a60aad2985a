// A tiny workload for node tests: HTTP on :8080 (or $PORT), / answers a greeting,
// /healthz answers ok (for readiness probes), /get?url=U fetches U from inside the Pod (its
// resolv.conf: the cluster DNS, the Pod's search path) and answers its body; logs one line
// per request; exits on SIGTERM.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
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
