// Reference B of the webhook bench (issue 13): the two bench rules written the usual
// kubebuilder way on controller-runtime's webhook package — admission.Handlers wrapped in
// webhook.Admission, registered on a webhook.Server, typed decode of the Deployment with
// the admission decoder, and the mutation returned by PatchResponseFromRaw.
//
// No manager and no cluster: the webhook server's mux (with its metrics instrumentation)
// is served by our own http.Server, because webhook.Server.Start fixes the idle timeout at
// 90 s and the bench contract asks for ≥ 95 s, and because the API server speaks HTTP/1.1
// to webhooks, so HTTP/2 is switched off.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

const mutatedLabel = "bench.annex.dev/mutated"

type nameValidator struct{ decoder admission.Decoder }

func (v *nameValidator) Handle(_ context.Context, req admission.Request) admission.Response {
	var d appsv1.Deployment
	if err := v.decoder.Decode(req, &d); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	path := field.NewPath("metadata", "name")
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(d.Name) {
		errs = append(errs, field.Invalid(path, d.Name, msg))
	}
	if len(errs) > 0 {
		resp := admission.Denied(errs.ToAggregate().Error())
		resp.Result.Code = http.StatusUnprocessableEntity
		resp.Result.Reason = metav1.StatusReasonInvalid
		return resp
	}
	return admission.Allowed("")
}

type defaulter struct{ decoder admission.Decoder }

func (m *defaulter) Handle(_ context.Context, req admission.Request) admission.Response {
	var d appsv1.Deployment
	if err := m.decoder.Decode(req, &d); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if d.Labels == nil {
		d.Labels = map[string]string{}
	}
	d.Labels[mutatedLabel] = "true"
	containers := d.Spec.Template.Spec.Containers
	for i := range containers {
		if containers[i].Resources.Requests == nil {
			containers[i].Resources.Requests = corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("128Mi"),
			}
		}
	}
	marshalled, err := json.Marshal(&d)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, marshalled)
}

func main() {
	logf.SetLogger(zap.New())
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "controller-runtime webhook:", err)
		os.Exit(1)
	}
}

func run() error {
	scheme := runtime.NewScheme()
	if err := appsv1.AddToScheme(scheme); err != nil {
		return err
	}
	decoder := admission.NewDecoder(scheme)

	hooks := webhook.NewServer(webhook.Options{})
	hooks.Register("/validate", &webhook.Admission{Handler: &nameValidator{decoder: decoder}})
	hooks.Register("/mutate", &webhook.Admission{Handler: &defaulter{decoder: decoder}})

	cert, err := tls.LoadX509KeyPair(os.Getenv("BENCH_CERT"), os.Getenv("BENCH_KEY"))
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           hooks.WebhookMux(),
		IdleTimeout:       100 * time.Second,
		ReadHeaderTimeout: 32 * time.Second,
		MaxHeaderBytes:    1 << 20,
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
	ln, err := tls.Listen("tcp", net.JoinHostPort("127.0.0.1", os.Getenv("BENCH_PORT")), tlsConfig)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	return srv.Serve(ln)
}
