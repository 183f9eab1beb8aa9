{{/* Chart name, truncated to the 63 characters of a DNS label. */}}
{{- define "rag.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: release-chart, or the release name alone when it already contains the chart name. */}}
{{- define "rag.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The eight services, in start order (ingestion first, the gateway last). */}}
{{- define "rag.serviceNames" -}}
loader chunker embedder indexer retriever reranker generator gateway
{{- end }}

{{/* Services that use the shared state in PostgreSQL (registry, API keys, source state, rate limits, leader lock). */}}
{{- define "rag.databaseUsers" -}}
gateway indexer retriever
{{- end }}

{{- define "rag.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "rag.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: rag-platform
{{- end }}

{{/* Selector labels of one service; call with (dict "root" $ "name" "gateway"). */}}
{{- define "rag.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rag.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end }}

{{/* Resource name of one service; call with (dict "root" $ "name" "gateway"). */}}
{{- define "rag.componentName" -}}
{{- printf "%s-%s" (include "rag.fullname" .root) .name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* One service's settings: serviceDefaults overridden by services.<name>, as JSON (use fromJson). */}}
{{- define "rag.service" -}}
{{- $own := index .root.Values.services .name | default dict }}
{{- toJson (mustMergeOverwrite (deepCopy .root.Values.serviceDefaults) (deepCopy $own)) }}
{{- end }}

{{- define "rag.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "rag.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "rag.secretName" -}}
{{- default (printf "%s-env" (include "rag.fullname" .)) .Values.existingSecret }}
{{- end }}

{{- define "rag.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* OTLP/HTTP endpoint the services export traces to (empty: none). */}}
{{- define "rag.otelEndpoint" -}}
{{- if .Values.otel.endpoint }}
{{- .Values.otel.endpoint }}
{{- else if .Values.otelCollector.enabled }}
{{- printf "http://%s-otel-collector:4318" (include "rag.fullname" .) }}
{{- end }}
{{- end }}

{{/* A memory quantity (Mi or Gi) in MiB, for GOMEMLIMIT. */}}
{{- define "rag.mebibytes" -}}
{{- $q := toString . }}
{{- if hasSuffix "Gi" $q }}{{ mul (trimSuffix "Gi" $q | int) 1024 }}
{{- else if hasSuffix "Mi" $q }}{{ trimSuffix "Mi" $q | int }}
{{- else }}{{ fail (printf "otelCollector.resources.limits.memory must be in Mi or Gi, not %q" $q) }}
{{- end }}
{{- end }}
