{{/*
Named templates for embedding switchboard in another chart's pod. Each takes
a dict with root ($) and values (switchboard's values), e.g. in a chart that
depends on this one (values under the key "switchboard", mode: embedded):

  {{- $sb := dict "root" $ "values" .Values.switchboard }}
  containers:
    - name: app
      ...
    {{- include "switchboard.container" $sb | nindent 4 }}
  volumes:
    {{- include "switchboard.volumes" $sb | nindent 4 }}

and in a file of its own:

  {{ include "switchboard.configMap" $sb }}

switchboard.container renders one list item (the container); add
"native" true to the dict to get a native sidecar for initContainers
(restartPolicy: Always). switchboard.volumes renders list items.
switchboard.configMap renders a whole ConfigMap object (nothing when
existingConfigMap is set).
*/}}

{{- define "switchboard.container" -}}
{{- $v := .values -}}
- name: switchboard
  image: {{ include "switchboard.image" . | quote }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  {{- if .native }}
  restartPolicy: Always
  {{- end }}
  args:
    - serve
    - --config
    - {{ printf "%s/%s" (include "switchboard.configDir" .) $v.configKey | quote }}
    {{- range $v.extraArgs }}
    - {{ . | quote }}
    {{- end }}
  env:
    - name: SWITCHBOARD_LISTEN
      value: {{ printf "%s:%d" (include "switchboard.listenHost" .) (int $v.ports.mcp) | quote }}
    - name: SWITCHBOARD_ADMIN_LISTEN
      value: {{ printf "%s:%d" $v.adminListenHost (int $v.ports.admin) | quote }}
    {{- if eq (include "switchboard.mode" .) "gateway" }}
    {{- /* The prefix of every session ID, so a proxy can route a session
    to the pod that holds its streams. Pod names are DNS labels. */}}
    - name: SWITCHBOARD_REPLICA
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    {{- end }}
    {{- with include "switchboard.sessionKeySecret" . }}
    - name: SWITCHBOARD_SESSION_KEY
      valueFrom:
        secretKeyRef:
          name: {{ . }}
          key: {{ $v.sessionKey.secretKey | default "session-key" | quote }}
    {{- end }}
    - name: HOME
      value: {{ $v.writableDirs.home | quote }}
    - name: TMPDIR
      value: /tmp
    {{- if include "switchboard.goMaxProcsFromCPULimit" . }}
    - name: GOMAXPROCS
      valueFrom:
        resourceFieldRef:
          containerName: switchboard
          resource: limits.cpu
          divisor: "1"
    {{- end }}
    {{- if $v.vault.enabled }}
    - name: VAULT_ADDR
      value: {{ $v.vault.address | quote }}
    - name: VAULT_K8S_ROLE
      value: {{ $v.vault.role | quote }}
    {{- if $v.vault.authMount }}
    - name: VAULT_K8S_MOUNT
      value: {{ $v.vault.authMount | quote }}
    {{- end }}
    {{- if $v.vault.namespace }}
    - name: VAULT_NAMESPACE
      value: {{ $v.vault.namespace | quote }}
    {{- end }}
    {{- if $v.vault.caSecret.name }}
    - name: VAULT_CACERT
      value: {{ printf "/var/run/secrets/switchboard/vault-ca/%s" $v.vault.caSecret.key | quote }}
    {{- end }}
    {{- if $v.vault.tokenAudience }}
    - name: VAULT_K8S_TOKEN_PATH
      value: /var/run/secrets/switchboard/vault-token/token
    {{- end }}
    {{- end }}
    {{- if $v.cloud.gcp.project }}
    - name: GOOGLE_CLOUD_PROJECT
      value: {{ $v.cloud.gcp.project | quote }}
    {{- end }}
    {{- if $v.cloud.aws.region }}
    - name: AWS_REGION
      value: {{ $v.cloud.aws.region | quote }}
    {{- end }}
    {{- with $v.env }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  {{- with $v.envFrom }}
  envFrom:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  ports:
    - name: mcp
      containerPort: {{ int $v.ports.mcp }}
      protocol: TCP
    - name: admin
      containerPort: {{ int $v.ports.admin }}
      protocol: TCP
  {{- with $v.probes.startup }}
  {{- if .enabled }}
  startupProbe:
    httpGet:
      path: /healthz
      port: admin
    periodSeconds: {{ int .periodSeconds }}
    timeoutSeconds: {{ int .timeoutSeconds }}
    failureThreshold: {{ int .failureThreshold }}
  {{- end }}
  {{- end }}
  {{- with $v.probes.liveness }}
  {{- if .enabled }}
  livenessProbe:
    httpGet:
      path: /healthz
      port: admin
    initialDelaySeconds: {{ int .initialDelaySeconds }}
    periodSeconds: {{ int .periodSeconds }}
    timeoutSeconds: {{ int .timeoutSeconds }}
    failureThreshold: {{ int .failureThreshold }}
  {{- end }}
  {{- end }}
  {{- with $v.probes.readiness }}
  {{- if .enabled }}
  readinessProbe:
    httpGet:
      path: /readyz
      port: admin
    initialDelaySeconds: {{ int .initialDelaySeconds }}
    periodSeconds: {{ int .periodSeconds }}
    timeoutSeconds: {{ int .timeoutSeconds }}
    failureThreshold: {{ int .failureThreshold }}
  {{- end }}
  {{- end }}
  {{- if include "switchboard.preStopSleep" . }}
  lifecycle:
    preStop:
      sleep:
        seconds: {{ int $v.preStopSleepSeconds }}
  {{- end }}
  {{- with $v.resources }}
  resources:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.securityContext }}
  securityContext:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  volumeMounts:
    - name: switchboard-config
      mountPath: {{ include "switchboard.configDir" . }}
      readOnly: true
    - name: switchboard-tmp
      mountPath: /tmp
    - name: switchboard-home
      mountPath: {{ $v.writableDirs.home | quote }}
    {{- range $v.secretMounts }}
    - name: {{ .name }}
      mountPath: {{ .mountPath | quote }}
      readOnly: true
    {{- end }}
    {{- if and $v.vault.enabled $v.vault.caSecret.name }}
    - name: switchboard-vault-ca
      mountPath: /var/run/secrets/switchboard/vault-ca
      readOnly: true
    {{- end }}
    {{- if and $v.vault.enabled $v.vault.tokenAudience }}
    - name: switchboard-vault-token
      mountPath: /var/run/secrets/switchboard/vault-token
      readOnly: true
    {{- end }}
    {{- with $v.extraVolumeMounts }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- end -}}

{{- define "switchboard.volumes" -}}
{{- $v := .values -}}
- name: switchboard-config
  configMap:
    name: {{ include "switchboard.configMapName" . }}
- name: switchboard-tmp
  emptyDir:
    {{- with $v.writableDirs.tmpSizeLimit }}
    sizeLimit: {{ . }}
    {{- end }}
- name: switchboard-home
  emptyDir:
    {{- with $v.writableDirs.homeSizeLimit }}
    sizeLimit: {{ . }}
    {{- end }}
{{- range $v.secretMounts }}
- name: {{ .name }}
  secret:
    secretName: {{ .secretName }}
    {{- with .items }}
    items:
      {{- toYaml . | nindent 6 }}
    {{- end }}
    {{- if .optional }}
    optional: true
    {{- end }}
{{- end }}
{{- if and $v.vault.enabled $v.vault.caSecret.name }}
- name: switchboard-vault-ca
  secret:
    secretName: {{ $v.vault.caSecret.name }}
    items:
      - key: {{ $v.vault.caSecret.key }}
        path: {{ $v.vault.caSecret.key }}
{{- end }}
{{- if and $v.vault.enabled $v.vault.tokenAudience }}
- name: switchboard-vault-token
  projected:
    sources:
      - serviceAccountToken:
          audience: {{ $v.vault.tokenAudience | quote }}
          expirationSeconds: {{ int $v.vault.tokenExpirationSeconds }}
          path: token
{{- end }}
{{- with $v.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "switchboard.configMap" -}}
{{- if not .values.existingConfigMap -}}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "switchboard.configMapName" . }}
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "switchboard.labels" . | nindent 4 }}
data:
  {{ .values.configKey }}: |
    {{- include "switchboard.configYAML" . | nindent 4 }}
{{- end -}}
{{- end -}}

{{/* The ServiceAccount annotations for cloud workload identity (GKE,
IRSA) plus serviceAccount.annotations, as a YAML map (or nothing). A chart
that embeds switchboard puts them on its own ServiceAccount. */}}
{{- define "switchboard.serviceAccountAnnotations" -}}
{{- $ann := deepCopy (.values.serviceAccount.annotations | default dict) -}}
{{- with .values.cloud.gcp.serviceAccount -}}
{{- $_ := set $ann "iam.gke.io/gcp-service-account" . -}}
{{- end -}}
{{- with .values.cloud.aws.roleArn -}}
{{- $_ := set $ann "eks.amazonaws.com/role-arn" . -}}
{{- end -}}
{{- if $ann -}}
{{- toYaml $ann -}}
{{- end -}}
{{- end -}}
