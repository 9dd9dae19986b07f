package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety/finding"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/internal/parallel"
	"github.com/crdsafety/kapp/pkg/kapp/internal/plural"
	"github.com/crdsafety/kapp/pkg/kapp/kube"
	"github.com/crdsafety/kapp/pkg/kapp/report"
	admissionv1 "k8s.io/api/admission/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/json"
)

// Reviewer judges admission requests for CustomResourceDefinitions with the
// evaluation service: an UPDATE is a pair (the stored CRD, the CRD as it
// would be stored), a DELETE a removal of the stored CRD. It is safe for
// concurrent use.
type Reviewer struct {
	// Settings are the check's settings, shared by every review (each
	// review adds the waivers of its CRD to a copy).
	Settings *config.Settings
	// Cluster reads the live custom resources (existingResources) and
	// counts them (crdDeletion). The reviewer never calls its DryRun: a
	// server-side dry run of the request would come back to this webhook.
	Cluster evaluation.Cluster
	// Logf, when set, gets one line per review and the stack of any panic.
	Logf func(format string, args ...any)
	// LogFields, when set, gets the line of each review as fields instead
	// of Logf (Logger.Fields: text or JSON).
	LogFields func(msg string, fields []LogField)
	// Metrics, when set, records each review.
	Metrics *Metrics
	// Comparisons, when set, keeps the comparisons of recent reviews'
	// CRDs (evaluation.Comparisons: by the content of both CRDs, the
	// settings, the Kubernetes version and the waivers expired); the
	// stored objects are read by every review. NewHandler sets it.
	Comparisons *evaluation.Comparisons
}

// WebhookSettings returns the settings the webhook evaluates with: cfg with
// apiserverRejects off. The apiserver calls validating webhooks after its
// own validation of the object: a request that reaches the webhook is
// already one the apiserver accepts, and its warnings go to the client
// from the apiserver itself.
//
// It also sets what the waiver annotations may waive when the settings do
// not say (annotationWaivers): nothing (annotationWaiversOf).
func WebhookSettings(cfg config.Settings) config.Settings {
	cfg.Checks.CRD.ApiserverRejects.Enabled = false
	return *annotationWaiversOf(&cfg)
}

// annotationWaiversOf is cfg where its annotationWaivers key says which
// checks a CRD's waiver annotations may waive, and otherwise cfg with
// none: in the webhook the annotation is written by the very writer the
// webhook guards, so by default it waives nothing; a cluster admin lets it
// waive the checks named in annotationWaivers.checks (never a loss of
// stored data: config.JudgeWaivers). Every review judges with it, however
// the Reviewer was made.
func annotationWaiversOf(cfg *config.Settings) *config.Settings {
	if cfg.AnnotationWaivers != nil {
		return cfg
	}
	out := *cfg
	out.AnnotationWaivers = &config.AnnotationWaivers{Checks: []string{}}
	return &out
}

var crdResource = metav1.GroupVersionResource{Group: apiextv1.GroupName, Version: "v1", Resource: "customresourcedefinitions"}

// verdict is what a review decided, before it becomes a response.
type verdict struct {
	findings []finding.Finding
	// skip says why the request was let through without judging it.
	skip string
	// err: the review could not judge the request; failMode decides.
	err error
	// waiver is the CRD's waiver annotation, for the audit log.
	waiver string
	// late: err is the review's deadline.
	late bool
}

// Review judges one request within ctx (whose deadline, and the settings'
// liveChecksTimeout, bound the live checks) and returns the response: allowed unless an error finding, an
// invalid waiver, or a failure to judge under failMode closed says
// otherwise. It never panics: a panic while judging is a failure to judge.
func (r *Reviewer) Review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return r.review(ctx, req, objectsOf(req), nil, nil)
}

// objects are the CRDs of a request, decoded: the CRD as it would be
// stored (object) and the stored CRD (oldObject), each nil when the
// request has none. err is a decoding error.
type objects struct {
	newCRD, oldCRD *apiextv1.CustomResourceDefinition
	err            error
	// key identifies both objects by the SHA-256 of their JSON, "" when
	// unknown: reviews of the same key judge the same objects.
	key string
}

// objectsOf decodes the objects of req.
func objectsOf(req *admissionv1.AdmissionRequest) objects {
	var o objects
	if len(req.Object.Raw) > 0 {
		o.newCRD, o.err = decodeCRD("object", req.Object.Raw)
	}
	if len(req.OldObject.Raw) > 0 && o.err == nil {
		o.oldCRD, o.err = decodeCRD("oldObject", req.OldObject.Raw)
	}
	return o
}

// review is Review with the request's objects decoded; with fs, the
// review shares its judgement with concurrent reviews of the same objects
// (flights); with slot, a judgement waits for a slot (Handler.slot).
func (r *Reviewer) review(ctx context.Context, req *admissionv1.AdmissionRequest, objs objects, fs *flights,
	slot func(context.Context) (func(), error)) *admissionv1.AdmissionResponse {

	start := time.Now()
	judge := func(ctx context.Context) verdict {
		if slot != nil {
			release, err := slot(ctx)
			if err != nil {
				return verdict{err: err}
			}
			defer release()
		}
		rr := r
		var counted *countingCluster
		if r.Cluster != nil {
			copied := *r
			copied.Cluster, counted = counting(r.Cluster)
			rr = &copied
		}
		v := rr.judge(ctx, req, objs)
		if counted != nil {
			r.Metrics.addObjectsRead(int(counted.read.Load()))
		}
		return v
	}
	var v verdict
	if fs != nil && objs.key != "" && objs.err == nil {
		key := strings.Join([]string{string(req.Operation), req.Resource.Group, req.Resource.Resource,
			req.SubResource, req.Name, objs.key}, "\x00")
		v = fs.do(ctx, key, judge)
	} else {
		v = judge(ctx)
	}
	v.late = v.err != nil && outOfTime(ctx, v.err)
	return r.log(req, v, start)
}

// outOfTime reports whether err, an evaluation's, is the deadline of ctx
// ending it: the context's error or cause, or an error just before the
// deadline (client-go's rate limiter refuses to wait past it, with an
// error of its own).
func outOfTime(ctx context.Context, err error) bool {
	if errors.Is(err, evaluation.ErrLiveChecksTimeout) || errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		return true
	}
	deadline, ok := ctx.Deadline()
	return ok && time.Until(deadline) < 250*time.Millisecond
}

// Unjudged is the response to a request the webhook could not judge
// (err says why): failMode decides.
func (r *Reviewer) Unjudged(req *admissionv1.AdmissionRequest, err error) *admissionv1.AdmissionResponse {
	return r.log(req, verdict{err: err, late: outOfTime(context.Background(), err)}, time.Now())
}

// log responds to req with v and logs the review.
func (r *Reviewer) log(req *admissionv1.AdmissionRequest, v verdict, start time.Time) *admissionv1.AdmissionResponse {
	var p *parallel.PanicError
	if errors.As(v.err, &p) {
		// A panic in one of the evaluation's goroutines.
		if r.Logf != nil {
			r.Logf("panic reviewing %s %s: %v\n%s", req.Operation, req.Name, p.Value, p.Stack)
		}
		v.err = fmt.Errorf("%w: %w", ErrPanic, v.err)
	}
	resp := r.respond(req, v)
	took := time.Since(start)
	r.Metrics.observe(req.Operation, v, took)
	fields := logFields(req, v, resp, took)
	switch {
	case r.LogFields != nil:
		r.LogFields("review", fields)
	case r.Logf != nil:
		r.Logf("%s", textLine("review", fields))
	}
	return resp
}

// judge decodes the request and evaluates it.
func (r *Reviewer) judge(ctx context.Context, req *admissionv1.AdmissionRequest, objs objects) (v verdict) {
	defer func() {
		if p := recover(); p != nil {
			if r.Logf != nil {
				r.Logf("panic reviewing %s %s: %v\n%s", req.Operation, req.Name, p, debug.Stack())
			}
			v = verdict{err: fmt.Errorf("%w: panic: %v", ErrPanic, p)}
		}
	}()
	if req.Resource == crdResource && req.SubResource == "status" && req.Operation == admissionv1.Update {
		return r.judgeStatus(ctx, objs)
	}
	if req.Resource != crdResource || req.SubResource != "" {
		return verdict{skip: fmt.Sprintf("not a CustomResourceDefinition (%s/%s %s): the webhook configuration routes requests it does not judge",
			req.Resource.Group, req.Resource.Resource, req.SubResource)}
	}
	switch req.Operation {
	case admissionv1.Update:
		return r.judgeUpdate(ctx, req, objs)
	case admissionv1.Delete:
		return r.judgeDelete(ctx, req, objs)
	default:
		// A create has no stored custom resources and no old schema;
		// the apiserver has validated it already.
		return verdict{skip: "nothing stored to protect on " + strings.ToLower(string(req.Operation))}
	}
}

func (r *Reviewer) judgeUpdate(ctx context.Context, req *admissionv1.AdmissionRequest, objs objects) verdict {
	if err := objs.bothCRDs(); err != nil {
		return verdict{err: err}
	}
	oldCRD, newCRD := objs.oldCRD, objs.newCRD
	switch {
	case oldCRD.DeletionTimestamp != nil:
		// The deletion was judged on DELETE; the apiserver's finalizer
		// now updates the CRD to finish it.
		return verdict{skip: "the CRD is being deleted"}
	case equality.Semantic.DeepEqual(oldCRD.Spec, newCRD.Spec):
		return verdict{skip: "spec unchanged", waiver: waiverAudit(newCRD.Annotations)}
	}
	pair := evaluation.Pair{Old: oldCRD, New: newCRD, Strategy: evaluation.StrategyUpdate, Key: objs.key}
	if req.DryRun != nil && *req.DryRun {
		// A kapp deploy's dry run before it rolls out the conversion
		// webhook's new code: judged at apply time, by this webhook
		// (evaluation.ApplyTimeAnnotation). A write is always probed.
		pair.Ordering = evaluation.ApplyTimeMark(newCRD)
	}
	plan := evaluation.Plan{Pairs: []evaluation.Pair{pair}, Comparisons: r.Comparisons, Conversion: r.conversionBudget()}
	res, err := r.run(ctx, plan)
	return verdict{findings: res.Findings, err: err, waiver: waiverAudit(newCRD.Annotations)}
}

// conversionBudget bounds the conversion probe of a review: the settings'
// webhook.conversion (config.Default's when unset).
func (r *Reviewer) conversionBudget() evaluation.ConversionProbe {
	b := config.Default().Webhook.Conversion
	if r.Settings != nil {
		if c := r.Settings.Webhook.Conversion; c.MaxObjects > 0 || c.Timeout > 0 {
			b = c
		}
	}
	return evaluation.ConversionProbe{MaxObjects: b.MaxObjects, Timeout: b.Timeout}
}

// bothCRDs is the decode error of an update's review (of the CRD or of its
// status): either object missing or undecodable; nil when both are there.
func (o objects) bothCRDs() error {
	switch {
	case o.err != nil:
		return asDecodeError(o.err)
	case o.oldCRD == nil:
		return asDecodeError(errors.New("the request has no oldObject"))
	case o.newCRD == nil:
		return asDecodeError(errors.New("the request has no object"))
	}
	return nil
}

// judgeStatus judges a write of a CRD's status: a drop of versions from
// status.storedVersions needs evidence that no object is stored in them
// (evaluation.JudgeStoredVersions); any other status write passes (the
// registration calls the webhook only for drops: examples/webhook).
func (r *Reviewer) judgeStatus(ctx context.Context, objs objects) verdict {
	if err := objs.bothCRDs(); err != nil {
		return verdict{err: err}
	}
	oldCRD, newCRD := objs.oldCRD, objs.newCRD
	sv, err := evaluation.JudgeStoredVersions(ctx, r.Cluster, oldCRD, newCRD, r.Settings)
	switch {
	case err != nil:
		return verdict{err: err}
	case len(sv.Removed) == 0:
		return verdict{skip: "status.storedVersions does not shrink"}
	case sv.Evidence != "":
		return verdict{skip: "status.storedVersions trimmed of " + strings.Join(sv.Removed, ", ") + " on evidence: " + sv.Evidence}
	}
	return verdict{findings: sv.Findings}
}

func (r *Reviewer) judgeDelete(ctx context.Context, req *admissionv1.AdmissionRequest, objs objects) verdict {
	crd := objs.oldCRD
	if objs.err != nil {
		return verdict{err: asDecodeError(objs.err)}
	}
	if crd == nil {
		// The apiserver sends the object being deleted since 1.15; read
		// it when it is missing.
		live, err := r.Cluster.GetCRDs(ctx, []string{req.Name})
		if err != nil {
			return verdict{err: err}
		}
		if crd = live[req.Name]; crd == nil {
			return verdict{skip: "the CRD no longer exists"}
		}
	}
	if crd.DeletionTimestamp != nil {
		return verdict{skip: "the CRD is being deleted already"}
	}
	plan := evaluation.Plan{Removals: []evaluation.Removal{{CRD: crd}}}
	res, err := r.run(ctx, plan)
	return verdict{findings: res.Findings, err: err, waiver: waiverAudit(crd.Annotations)}
}

// run evaluates the plan of one request (evaluation.Run), with the live
// checks on whenever the reviewer has a cluster.
func (r *Reviewer) run(ctx context.Context, plan evaluation.Plan) (evaluation.Result, error) {
	req := evaluation.Request{Plan: plan, Settings: annotationWaiversOf(r.Settings), AlwaysLive: true}
	if r.Cluster != nil {
		req.Cluster = func() (evaluation.Cluster, error) { return r.Cluster, nil }
	}
	return evaluation.Run(ctx, req)
}

// ErrPanic is wrapped by the error of a review that panicked.
var ErrPanic = errors.New("internal error")

// decodeCRD decodes one object of the request, as the apiserver encodes
// it (JSON, case-sensitive keys).
func decodeCRD(what string, raw []byte) (*apiextv1.CustomResourceDefinition, error) {
	crd := &apiextv1.CustomResourceDefinition{}
	if err := json.UnmarshalCaseSensitivePreserveInts(raw, crd); err != nil {
		return nil, fmt.Errorf("decoding the %s: %w", what, err)
	}
	return crd, checkCRD(what, crd)
}

// checkCRD checks that an object decoded as a CRD says it is one.
func checkCRD(what string, crd *apiextv1.CustomResourceDefinition) error {
	if crd.APIVersion != apiextv1.SchemeGroupVersion.String() || crd.Kind != "CustomResourceDefinition" {
		return fmt.Errorf("the %s is a %s %s, not an %s CustomResourceDefinition",
			what, crd.APIVersion, crd.Kind, apiextv1.SchemeGroupVersion)
	}
	return nil
}

// respond turns a verdict into the admission response.
func (r *Reviewer) respond(req *admissionv1.AdmissionRequest, v verdict) *admissionv1.AdmissionResponse {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	op := strings.ToLower(string(req.Operation))
	subject := fmt.Sprintf("%s of CRD %s", op, req.Name)
	if req.SubResource != "" {
		subject = fmt.Sprintf("%s of the %s of CRD %s", op, req.SubResource, req.Name)
	}
	switch {
	case v.skip != "":
		return resp
	case errors.Is(v.err, config.ErrInvalidWaiver):
		return deny(resp, fmt.Sprintf("%s denied the %s: %v", config.CheckName, subject, v.err))
	case v.err != nil:
		cause, _ := report.ShortenMessage(v.err.Error(), 1024)
		var more []string
		var fe *kube.ForbiddenError
		switch {
		case errors.As(v.err, &fe):
			// A read the webhook's role does not allow: the rule it lacks
			// and the command that regenerates the role.
			parts := report.MissingRule(fe.Group, fe.Resource, fe.Verb)
			cause, more = parts[0], parts[1:]
		case v.late:
			cause = "the live checks did not finish in time (the apiserver's timeout for this webhook, less a margin, or liveChecksTimeout): " + cause
		}
		if fail := r.Settings.FailDecisionFor(config.FailWebhookReviewUnfinished, nil); fail.Decision != config.FailBlock {
			resp.Warnings = []string{report.AdmissionWarning(fmt.Sprintf("could not check the %s, allowed under failMode open: %s", subject, cause))}
			for _, m := range more {
				resp.Warnings = append(resp.Warnings, report.AdmissionWarning(m))
			}
			return resp
		}
		return deny(resp, fmt.Sprintf("%s could not check the %s, denied under failMode closed: %s", config.CheckName, subject,
			strings.Join(append([]string{cause}, more...), "; ")))
	}
	// The webhook answers whoever can reach it, and its role reads every
	// custom resource of the CRDs it guards: the stored values stay out of
	// its answers (the objects, the field and the rule stay in) unless the
	// settings reveal them (webhook.revealStoredValues).
	findings := v.findings
	if !r.Settings.Webhook.RevealStoredValues {
		findings = finding.WithoutStoredValues(findings)
	}
	denial, warnings := report.Admission(findings)
	resp.Warnings = warnings
	errs, warns := report.Count(v.findings)
	resp.AuditAnnotations = map[string]string{"errors": strconv.Itoa(errs), "warnings": strconv.Itoa(warns)}
	if v.waiver != "" {
		resp.AuditAnnotations["waived"] = v.waiver
	}
	if errs == 0 {
		return resp
	}
	msg := fmt.Sprintf("%s denied the %s: %d error %s:\n  %s", config.CheckName, subject, errs,
		plural.Of(errs, "finding", "findings"), strings.Join(denial, "\n  "))
	resp = deny(resp, msg)
	// The findings as data too: the apiserver passes the details on, and
	// a preflight whose server-side dry run this denies tells its own
	// findings from the webhook's by them (config.FindingCause).
	resp.Result.Details = &metav1.StatusDetails{Name: req.Name, Group: crdResource.Group, Kind: crdResource.Resource,
		Causes: report.DenialCauses(findings)}
	return resp
}

// deny refuses the request with 403 Forbidden: never 422 Invalid, on which
// kapp's fallback-on-replace update strategy would delete and recreate the
// CRD (and lose its custom resources).
func deny(resp *admissionv1.AdmissionResponse, msg string) *admissionv1.AdmissionResponse {
	resp.Allowed = false
	resp.Result = &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusForbidden,
		Reason: metav1.StatusReasonForbidden, Message: msg}
	return resp
}

// logFields are the fields of the one log line of a review.
func logFields(req *admissionv1.AdmissionRequest, v verdict, resp *admissionv1.AdmissionResponse, took time.Duration) []LogField {
	fields := []LogField{
		{Key: "uid", Value: string(req.UID)},
		{Key: "op", Value: string(req.Operation)},
		{Key: "crd", Value: req.Name},
		{Key: "user", Value: req.UserInfo.Username, Quote: true},
		{Key: "dryRun", Value: req.DryRun != nil && *req.DryRun},
		{Key: "allowed", Value: resp.Allowed},
	}
	switch {
	case v.skip != "":
		fields = append(fields, LogField{Key: "skipped", Value: v.skip, Quote: true})
	case v.err != nil:
		fields = append(fields, LogField{Key: "error", Value: v.err.Error(), Quote: true})
	default:
		errs, warns := report.Count(v.findings)
		fields = append(fields, LogField{Key: "errors", Value: errs}, LogField{Key: "warnings", Value: warns})
	}
	if v.waiver != "" {
		fields = append(fields, LogField{Key: "waived", Value: v.waiver, Quote: true})
	}
	return append(fields, LogField{Key: "took", Value: took.Round(time.Millisecond)})
}

// waiverAudit is what the audit annotation and the log line "waived" say
// of a CRD's waiver annotations: the waived check IDs as written, and the
// waived fingerprints ("enum,minimum fingerprints=1a2b3c4d5e6f"); "" for
// none.
func waiverAudit(annotations map[string]string) string {
	out := annotations[config.WaiveAnnotation]
	if fps := annotations[config.WaiveFingerprintsAnnotation]; fps != "" {
		out = strings.TrimSpace(out + " fingerprints=" + fps)
	}
	return out
}
