{{/* The release's name for its objects, at most 63 characters. */}}
{{- define "ct.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "ct.web" -}}{{ include "ct.fullname" . | trunc 59 | trimSuffix "-" }}-web{{- end -}}
{{- define "ct.postgresql" -}}{{ include "ct.fullname" . | trunc 52 | trimSuffix "-" }}-postgresql{{- end -}}
{{- define "ct.secret" -}}{{ .Values.secrets.name | default (include "ct.fullname" .) }}{{- end -}}

{{/* The labels every object of the release has. */}}
{{- define "ct.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The labels that select a component's pods: include with (list . "web"). */}}
{{- define "ct.selector" -}}
app.kubernetes.io/name: {{ default (index . 0).Chart.Name (index . 0).Values.nameOverride }}
app.kubernetes.io/instance: {{ (index . 0).Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{/* The builds' namespace of an entry of tekton.namespaces: include with (list . $entry). */}}
{{- define "ct.buildsNamespace" -}}
{{- (index . 1).name | default (printf "%s-builds" (index . 0).Release.Namespace) -}}
{{- end -}}

{{/* An image of the project's: include with (list . "web"). */}}
{{- define "ct.image" -}}
{{- printf "%s/%s:%s" (trimSuffix "/" (index . 0).Values.image.registry) (index . 1) (index . 0).Values.image.tag -}}
{{- end -}}

{{/* The security context of every container of ours: Pod Security "restricted". */}}
{{- define "ct.containerSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}

{{/* The chart's refusals: values it cannot honour. */}}
{{- define "ct.validate" -}}
{{- if lt (int .Values.web.replicas) 1 -}}
{{- fail "web.replicas: one web node at least" -}}
{{- end -}}
{{- if not .Values.tekton.namespaces -}}
{{- fail "tekton.namespaces: at least one namespace for the builds" -}}
{{- end -}}
{{- $seen := dict -}}
{{- range $i, $ns := .Values.tekton.namespaces -}}
{{- $name := include "ct.buildsNamespace" (list $ $ns) -}}
{{- if hasKey $seen $name -}}
{{- fail (printf "tekton.namespaces[%d]: namespace %s is listed twice" $i $name) -}}
{{- end -}}
{{- $_ := set $seen $name true -}}
{{- if eq $name $.Release.Namespace -}}
{{- fail (printf "tekton.namespaces[%d]: builds run in a namespace of their own, not the release's (%s), whose pods are Pod Security restricted" $i $name) -}}
{{- end -}}
{{- if not (has ($ns.podSecurity | default "baseline") (list "baseline" "privileged")) -}}
{{- fail (printf "tekton.namespaces[%d].podSecurity: %q is not baseline or privileged (steps need at least baseline)" $i $ns.podSecurity) -}}
{{- end -}}
{{- end -}}
{{- range $tag, $labels := .Values.tekton.tagNodeSelectors -}}
{{- if not (kindIs "map" $labels) -}}
{{- fail (printf "tekton.tagNodeSelectors.%s: want the node labels of the tag, LABEL: VALUE" $tag) -}}
{{- end -}}
{{- range $label, $value := $labels -}}
{{- if regexMatch "[,=]" (printf "%s%s%s" $tag $label (toString $value)) -}}
{{- fail (printf "tekton.tagNodeSelectors.%s.%s: %q: a tag, a label and its value hold no , or =" $tag $label (toString $value)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $i, $e := .Values.concourse.web.env -}}
{{- if has $e.name (list "CONCOURSE_TEKTON_GARDEN_BIND_IP" "CONCOURSE_TEKTON_BAGGAGECLAIM_BIND_IP") -}}
{{- fail (printf "concourse.web.env[%d]: %s: the Garden and baggageclaim servers authenticate no one, and the chart keeps them on the web pod's loopback, where only the web node's own user reaches them" $i $e.name) -}}
{{- end -}}
{{- end -}}
{{- if and (not .Values.postgresql.enabled) (not .Values.concourse.web.postgres.host) -}}
{{- fail "concourse.web.postgres.host: the database's address, when postgresql.enabled is false" -}}
{{- end -}}
{{- end -}}

{{/* The CIDRs of a list that are IPv6 ones (list $cidrs true) or IPv4 ones (list $cidrs false), as a YAML list. */}}
{{- define "ct.cidrs" -}}
{{- $v6 := index . 1 -}}
{{- $out := list -}}
{{- range (index . 0) -}}
{{- if eq (contains ":" .) $v6 -}}
{{- $out = append $out . -}}
{{- end -}}
{{- end -}}
{{- toYaml $out -}}
{{- end -}}
