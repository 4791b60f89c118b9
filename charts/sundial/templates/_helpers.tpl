{{/* Names, labels and shared Pod fragments of the Sundial chart. */}}

{{- define "sundial.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sundial.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "sundial.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "sundial.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The name of one component's objects: "<fullname>-<component>". */}}
{{- define "sundial.componentName" -}}
{{- printf "%s-%s" (include "sundial.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- /* A component's ServiceAccount: its serviceAccount.name when set (an existing account,
or one the chart makes under that name), else the component's name. */ -}}
{{- define "sundial.serviceAccountName" -}}
{{- default (include "sundial.componentName" (dict "root" .root "component" .component)) .values.serviceAccount.name -}}
{{- end -}}

{{- define "sundial.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "sundial.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: sundial
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of one component: dict "root" $ "component" "operator". */}}
{{- define "sundial.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sundial.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "sundial.componentLabels" -}}
{{ include "sundial.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* An image reference: the component's repository (default imageRegistry/NAME), its tag
(default the appVersion) and, when set, its digest. */}}
{{- define "sundial.image" -}}
{{- $repository := .image.repository | default (printf "%s/%s" (trimSuffix "/" .root.Values.imageRegistry) .name) -}}
{{- $reference := printf "%s:%s" $repository (default .root.Chart.AppVersion .image.tag) -}}
{{- if .image.digest -}}
{{- printf "%s@%s" $reference .image.digest -}}
{{- else -}}
{{- $reference -}}
{{- end -}}
{{- end -}}

{{/* The Secret and key holding SUNDIAL_DSN. */}}
{{- define "sundial.dsnSecretName" -}}
{{- if .Values.postgresql.bundled.enabled -}}
{{- include "sundial.componentName" (dict "root" . "component" "postgresql") -}}
{{- else -}}
{{- .Values.postgresql.existingSecret.name -}}
{{- end -}}
{{- end -}}

{{/*
The hot queue's Redis URL (SUNDIAL_HOT_QUEUE_URL) for the runner, the operator and the history
API, when the hot queue is on: from the bundled Redis's Secret or yours.
*/}}
{{- define "sundial.hotQueueEnv" -}}
{{- if .Values.hotQueue.enabled -}}
- name: SUNDIAL_HOT_QUEUE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .Values.hotQueue.bundled.enabled | ternary (include "sundial.componentName" (dict "root" . "component" "redis")) .Values.hotQueue.existingSecret.name }}
      key: {{ .Values.hotQueue.bundled.enabled | ternary "url" .Values.hotQueue.existingSecret.key }}
{{- end -}}
{{- end -}}

{{- define "sundial.dsnSecretKey" -}}
{{- if .Values.postgresql.bundled.enabled -}}dsn{{- else -}}{{ .Values.postgresql.existingSecret.key }}{{- end -}}
{{- end -}}

{{- define "sundial.dsnEnv" -}}
- name: SUNDIAL_DSN
  valueFrom:
    secretKeyRef:
      name: {{ include "sundial.dsnSecretName" . }}
      key: {{ include "sundial.dsnSecretKey" . }}
{{- end -}}

{{/*
The key of the DSN a component (operator, runner, reader) connects with: its own database
login's (docs/operations.md, "Database roles"). The bundled PostgreSQL's Secret has one per
component; with your own, `existingSecret.<component>Key`, else the owner's `key`.
*/}}
{{- define "sundial.componentDsnKey" -}}
{{- if .root.Values.postgresql.bundled.enabled -}}
{{- printf "%s-dsn" .component -}}
{{- else -}}
{{- (get .root.Values.postgresql.existingSecret (printf "%sKey" .component)) | default .root.Values.postgresql.existingSecret.key -}}
{{- end -}}
{{- end -}}

{{- define "sundial.componentDsnEnv" -}}
- name: {{ .name | default "SUNDIAL_DSN" }}
  valueFrom:
    secretKeyRef:
      name: {{ include "sundial.dsnSecretName" .root }}
      key: {{ include "sundial.componentDsnKey" . }}
{{- end -}}

{{/* The login `sundial migrate` makes for a component of the bundled PostgreSQL. */}}
{{- define "sundial.bundledLogin" -}}
{{- printf "%s_%s_login" .root.Values.postgresql.roles.prefix .component -}}
{{- end -}}

{{/* Namespaces where job Pods run. */}}
{{- define "sundial.jobPodNamespaces" -}}
{{- $namespaces := .Values.jobPods.namespaces | default .Values.watchNamespaces | default (list .Release.Namespace) -}}
{{- toJson (uniq $namespaces) -}}
{{- end -}}

{{/* Namespaces the runner serves: ["*"] is every namespace (no --namespace flag). */}}
{{- define "sundial.runnerNamespaces" -}}
{{- $namespaces := .Values.runner.namespaces | default .Values.watchNamespaces | default (list .Release.Namespace) -}}
{{- toJson (uniq $namespaces) -}}
{{- end -}}

{{/* The Pod securityContext: the chart's restricted default merged with the component's. */}}
{{- define "sundial.podSecurityContext" -}}
{{- toYaml (merge (deepCopy .component) .root.Values.podSecurityContext) -}}
{{- end -}}

{{- define "sundial.containerSecurityContext" -}}
{{- toYaml (merge (deepCopy .component) .root.Values.containerSecurityContext) -}}
{{- end -}}

{{/* nodeSelector, tolerations, affinity, priorityClassName and pull secrets of a Pod. */}}
{{- define "sundial.scheduling" -}}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The `sundial migrate` container, for the hook Job or an init container. */}}
{{- define "sundial.migrateContainer" -}}
name: migrate
image: {{ include "sundial.image" (dict "root" . "name" "operator" "image" .Values.operator.image) }}
imagePullPolicy: {{ .Values.operator.image.pullPolicy }}
args:
  - migrate
  - --role-prefix={{ .Values.postgresql.roles.prefix }}
  {{- if .Values.postgresql.bundled.enabled }}
  {{- range $component := list "operator" "runner" "reader" }}
  - --login={{ $component }}={{ include "sundial.bundledLogin" (dict "root" $ "component" $component) }}
  {{- end }}
  {{- end }}
  {{- range $login, $namespaces := .Values.postgresql.roles.loginNamespaces }}
  - --login-namespaces={{ $login }}={{ kindIs "string" $namespaces | ternary $namespaces (join "," $namespaces) }}
  {{- end }}
  {{- /* The database's mode follows hotQueue.enabled (a no-op when it already does). */}}
  - --hot-queue={{ .Values.hotQueue.enabled | ternary "on" "off" }}
env:
  {{- include "sundial.dsnEnv" . | nindent 2 }}
  {{- if .Values.postgresql.bundled.enabled }}
  {{- range $component := list "operator" "runner" "reader" }}
  - name: SUNDIAL_LOGIN_PASSWORD_{{ upper $component }}
    valueFrom:
      secretKeyRef:
        name: {{ include "sundial.dsnSecretName" $ }}
        key: {{ $component }}-password
  {{- end }}
  {{- end }}
{{- with .Values.migrations.extraEnvFrom }}
envFrom:
  {{- toYaml . | nindent 2 }}
{{- end }}
resources:
  {{- toYaml .Values.migrations.resources | nindent 2 }}
securityContext:
  {{- include "sundial.containerSecurityContext" (dict "root" . "component" dict) | nindent 2 }}
volumeMounts:
  - name: tmp
    mountPath: /tmp
  {{- with .Values.migrations.extraVolumeMounts }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end -}}

{{/*
The Secret holding the history API's serving certificate (tls.crt, tls.key). Named after the
history-api component: the certificate names its Service, and a release upgraded from one
where the operator served the history gets a new pair for the new name.
*/}}
{{- define "sundial.historyTlsSecret" -}}
{{- .Values.historyApi.tls.existingSecret | default (include "sundial.componentName" (dict "root" . "component" "history-api-tls")) -}}
{{- end }}

{{- define "sundial.operatorMetricsTlsSecret" -}}
{{- .Values.operator.metricsTls.existingSecret | default (include "sundial.componentName" (dict "root" . "component" "operator-metrics-tls")) -}}
{{- end }}
