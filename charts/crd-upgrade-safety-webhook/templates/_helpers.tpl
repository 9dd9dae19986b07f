{{/* The names of the install's objects: those of examples/webhook with the default namePrefix. */}}
{{- define "cus.server" -}}{{ .Values.namePrefix }}-webhook{{- end -}}
{{- define "cus.settings" -}}{{ .Values.namePrefix }}-settings{{- end -}}
{{- define "cus.registration" -}}{{ .Values.namePrefix }}{{- end -}}
{{- define "cus.tlsSecret" -}}{{ default (printf "%s-webhook-tls" .Values.namePrefix) .Values.tls.secretName }}{{- end -}}
{{- define "cus.image" -}}{{ default (printf "ghcr.io/crdsafety/kapp:v%s" .Chart.AppVersion) .Values.image }}{{- end -}}
{{- define "cus.labels" -}}
app.kubernetes.io/name: {{ include "cus.server" . }}
{{- end -}}

{{/* The settings file: mode, failMode, then settings.extra. */}}
{{- define "cus.settingsFile" -}}
{{- $extra := .Values.settings.extra | default "" | trim -}}
{{- if $extra -}}
{{- $m := fromYaml $extra -}}
{{- if hasKey $m "Error" -}}{{- fail (printf "settings.extra: want YAML of a map (checks, exemptions, liveChecksTimeout): %s" (get $m "Error")) -}}{{- end -}}
{{- range list "mode" "failMode" -}}{{- if hasKey $m . -}}{{- fail (printf "settings.extra: set %s as settings.%s, not in settings.extra" . .) -}}{{- end -}}{{- end -}}
{{- end -}}
mode: {{ .Values.settings.mode }}
failMode: {{ .Values.settings.failMode }}
{{ if $extra }}{{ $extra }}
{{ end -}}
{{- end -}}

{{/* The registration's webhooks. */}}
{{- define "cus.clientConfig" -}}
{{- if .Values.webhook.url }}
url: {{ .Values.webhook.url | quote }}
{{- else }}
service:
  namespace: {{ .Release.Namespace }}
  name: {{ include "cus.server" . }}
  path: /validate
  port: 443
{{- end }}
{{- if ne .Values.tls.source "cert-manager" }}
{{- if not .Values.tls.caBundle }}{{ fail (printf "tls.caBundle: required with tls.source %s (the PEM of the CA that signed the serving certificate)" .Values.tls.source) }}{{ end }}
caBundle: {{ .Values.tls.caBundle | b64enc }}
{{- end }}
{{- end -}}

{{/* The NetworkPolicy's peers of the review port: an ipBlock per
apiserverCIDRs entry, each with the exceptCIDRs of its address family. */}}
{{- define "cus.apiserverPeers" -}}
{{- $np := .Values.networkPolicy -}}
{{- range $cidr := $np.apiserverCIDRs }}
- ipBlock:
    cidr: {{ $cidr }}
    {{- $except := list -}}
    {{- range $x := $np.exceptCIDRs -}}
    {{- if eq (contains ":" $x) (contains ":" $cidr) -}}{{- $except = append $except $x -}}{{- end -}}
    {{- end -}}
    {{- if $except }}
    except:
    {{- range $except }}
    - {{ . }}
    {{- end }}
    {{- end }}
{{- end }}
{{- end -}}
