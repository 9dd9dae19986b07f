// Package widget is what the three builds of the conversion webhook share:
// the command line, the TLS server on loopback around controller-runtime's
// conversion handler (sigs.k8s.io/controller-runtime/pkg/webhook/conversion),
// one log line per ConversionReview, and the registration of a build's v1
// (spoke) and v2 (hub) Go types under the group and kind of the CRD it
// serves. Each build (package lossless, lossy, failing) is a main package
// with its own Go types and conversion functions: a release of an operator's
// conversion code.
package widget

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

// Path is where the webhook serves ConversionReviews.
const Path = "/convert"

// Types are a build's Go types: V1 the spoke (a conversion.Convertible),
// V2 the hub (a conversion.Hub), as the scheme allocates them.
type Types struct {
	V1, V2 runtime.Object
}

// Main runs the webhook of the build named build with its types until
// SIGTERM or SIGINT; it exits 2 on bad flags, 1 when it cannot serve.
func Main(build string, types Types) {
	fs := flag.NewFlagSet(build, flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to serve on (host:port; port 0: a free one)")
	certFile := fs.String("tls-cert-file", "", "the serving certificate (PEM), required")
	keyFile := fs.String("tls-private-key-file", "", "its private key (PEM), required")
	group := fs.String("group", "e2e.example.com", "the API group of the CRD served")
	kind := fs.String("kind", "Widget", "the kind of the CRD served")
	_ = fs.Parse(os.Args[1:])
	if *certFile == "" || *keyFile == "" || fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "usage: %s --tls-cert-file FILE --tls-private-key-file FILE [--listen ADDR] [--group G] [--kind K]\n", build)
		os.Exit(2)
	}
	if err := run(build, types, *listen, *certFile, *keyFile, *group, *kind); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", build, err)
		os.Exit(1)
	}
}

func run(build string, types Types, listen, certFile, keyFile, group, kind string) error {
	// controller-runtime logs why a review failed ("failed to convert").
	logf.SetLogger(funcr.New(func(prefix, args string) {
		fmt.Fprintf(os.Stderr, "%s %s\n", prefix, args)
	}, funcr.Options{}))

	handler, err := Handler(types, group, kind)
	if err != nil {
		return fmt.Errorf("%s: %w", build, err)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("loading the serving certificate: %w", err)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", listen, err)
	}
	mux := http.NewServeMux()
	mux.Handle(Path, logged(handler))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv := &http.Server{
		Handler:           mux,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	fmt.Fprintf(os.Stderr, "serving conversion reviews on https://%s%s (build %s, kind %s.%s)\n", ln.Addr(), Path, build, kind, group)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-done:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("stopping: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving: %w", err)
	}
	fmt.Fprintln(os.Stderr, "stopped")
	return nil
}

// Handler is controller-runtime's conversion webhook handler for types
// registered as kind of group at v1 and v2.
func Handler(types Types, group, kind string) (http.Handler, error) {
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}, types.V1)
	scheme.AddKnownTypeWithName(schema.GroupVersionKind{Group: group, Version: "v2", Kind: kind}, types.V2)
	if ok, err := conversion.IsConvertible(scheme, types.V1); err != nil || !ok {
		return nil, fmt.Errorf("the types are not hub and spoke: %v", err)
	}
	return conversion.NewWebhookHandler(scheme, conversion.NewRegistry()), nil
}

// review is what the log line of a ConversionReview says: its request's
// uid, target and objects (by apiVersion, in order), and its response's
// result.
type review struct {
	Request *struct {
		UID               string `json:"uid"`
		DesiredAPIVersion string `json:"desiredAPIVersion"`
		Objects           []struct {
			APIVersion string `json:"apiVersion"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"objects"`
	} `json:"request"`
	Response *struct {
		Result struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"result"`
	} `json:"response"`
}

// logged logs one line per ConversionReview handled by next:
// "review UID: N objects (NAME at VERSION, ...) to VERSION: Success" or
// "... : Failure: MESSAGE".
func logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)

		var req, resp review
		_ = json.Unmarshal(body, &req)
		_ = json.Unmarshal(rec.Body.Bytes(), &resp)
		line := "review"
		if req.Request != nil {
			objs := ""
			for i, o := range req.Request.Objects {
				if i > 0 {
					objs += ", "
				}
				objs += o.Metadata.Name + " at " + o.APIVersion
			}
			line = fmt.Sprintf("review %s: %d objects (%s) to %s", req.Request.UID, len(req.Request.Objects), objs, req.Request.DesiredAPIVersion)
		}
		switch {
		case resp.Response == nil:
			line += fmt.Sprintf(": HTTP %d", rec.Code)
		case resp.Response.Result.Message != "":
			line += ": " + resp.Response.Result.Status + ": " + resp.Response.Result.Message
		default:
			line += ": " + resp.Response.Result.Status
		}
		fmt.Fprintln(os.Stderr, line)

		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

// DeepCopy copies in through JSON: the Widget types are small and hold
// only JSON values.
func DeepCopy[T any](in *T) *T {
	if in == nil {
		return nil
	}
	data, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("deep copy of %T: %v", in, err))
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		panic(fmt.Sprintf("deep copy of %T: %v", in, err))
	}
	return out
}
