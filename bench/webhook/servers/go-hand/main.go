// Reference B′ of the webhook bench (issue 13): the two bench rules in hand-optimised Go —
// net/http + crypto/tls only, decoding just the fields the rules read and writing the
// JSONPatch and the AdmissionReview bytes directly (no typed objects, no diffing).
//
// Built with GOEXPERIMENT=jsonv2 (bench/webhook/servers/build.mjs): encoding/json then runs
// on the v2 decoder, which halves the CPU of a 10 KB review; the constraint below keeps a
// plain build from measuring something else.

//go:build goexperiment.jsonv2

package main

import (
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// Only what the rules read; encoding/json skips everything else without allocating it.
type review struct {
	APIVersion string `json:"apiVersion"`
	Request    struct {
		UID    string `json:"uid"`
		Object struct {
			Metadata struct {
				Name   string          `json:"name"`
				Labels json.RawMessage `json:"labels"`
			} `json:"metadata"`
			Spec *struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Resources *struct {
								Requests json.RawMessage `json:"requests"`
							} `json:"resources"`
						} `json:"containers"`
					} `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		} `json:"object"`
	} `json:"request"`
}

const (
	labelPath      = "/metadata/labels/bench.annex.dev~1mutated" // '/' in the key escaped as ~1
	labelsValue    = `{"bench.annex.dev/mutated":"true"}`
	requestsValue  = `{"cpu":"100m","memory":"128Mi"}`
	containersPath = "/spec/template/spec/containers/"
	dns1123Message = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', " +
		"and must start and end with an alphanumeric character, at most 63 characters"
)

var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func isDNS1123Label(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
		if !alnum && (c != '-' || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

func isAbsent(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// buildPatch appends the JSONPatch of the mutate rule to out.
func buildPatch(out *bytes.Buffer, r *review) {
	obj := &r.Request.Object
	out.WriteByte('[')
	if isAbsent(obj.Metadata.Labels) {
		out.WriteString(`{"op":"add","path":"/metadata/labels","value":` + labelsValue + `}`)
	} else {
		out.WriteString(`{"op":"add","path":"` + labelPath + `","value":"true"}`)
	}
	if obj.Spec != nil {
		for i, c := range obj.Spec.Template.Spec.Containers {
			switch {
			case c.Resources == nil:
				out.WriteString(`,{"op":"add","path":"` + containersPath + strconv.Itoa(i) +
					`/resources","value":{"requests":` + requestsValue + `}}`)
			case isAbsent(c.Resources.Requests):
				out.WriteString(`,{"op":"add","path":"` + containersPath + strconv.Itoa(i) +
					`/resources/requests","value":` + requestsValue + `}`)
			}
		}
	}
	out.WriteByte(']')
}

func handler(mutate bool) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		in := buffers.Get().(*bytes.Buffer)
		defer buffers.Put(in)
		in.Reset()
		if _, err := io.Copy(in, req.Body); err != nil {
			http.Error(w, "cannot read the request body", http.StatusBadRequest)
			return
		}
		var r review
		if err := json.Unmarshal(in.Bytes(), &r); err != nil {
			http.Error(w, "the body is not an AdmissionReview", http.StatusBadRequest)
			return
		}
		uid, _ := json.Marshal(r.Request.UID)

		out := buffers.Get().(*bytes.Buffer)
		defer buffers.Put(out)
		out.Reset()
		out.WriteString(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":`)
		out.Write(uid)
		switch {
		case mutate:
			// The patch goes into the reused input buffer, then base64 into the output.
			in.Reset()
			buildPatch(in, &r)
			out.WriteString(`,"allowed":true,"patchType":"JSONPatch","patch":"`)
			enc := base64.NewEncoder(base64.StdEncoding, out)
			enc.Write(in.Bytes())
			enc.Close()
			out.WriteString(`"}}`)
		case isDNS1123Label(r.Request.Object.Metadata.Name):
			out.WriteString(`,"allowed":true}}`)
		default:
			msg, _ := json.Marshal(fmt.Sprintf("metadata.name: Invalid value: %q: %s", r.Request.Object.Metadata.Name, dns1123Message))
			out.WriteString(`,"allowed":false,"status":{"code":422,"reason":"Invalid","message":`)
			out.Write(msg)
			out.WriteString(`}}}`)
		}
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{strconv.Itoa(out.Len())}
		w.Write(out.Bytes())
	}
}

func main() {
	cert, err := tls.LoadX509KeyPair(os.Getenv("BENCH_CERT"), os.Getenv("BENCH_KEY"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-hand webhook:", err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /validate", handler(false))
	mux.Handle("POST /mutate", handler(true))
	srv := &http.Server{
		Handler:           mux,
		IdleTimeout:       100 * time.Second,
		ReadHeaderTimeout: 32 * time.Second,
		// The API server calls webhooks over HTTP/1.1: no HTTP/2.
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
	ln, err := tls.Listen("tcp", net.JoinHostPort("127.0.0.1", os.Getenv("BENCH_PORT")), tlsConfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "go-hand webhook:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	fmt.Fprintln(os.Stderr, srv.Serve(ln))
	os.Exit(1)
}
