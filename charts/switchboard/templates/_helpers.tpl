{{/*
Helpers shared by this chart's templates and by the named templates another
chart embeds (see _switchboard.tpl). Every helper takes a dict:
  root    the top-level context ($), for .Release and .Chart
  values  switchboard's values (.Values here, .Values.switchboard in a
          chart that depends on this one)
*/}}

{{- define "switchboard.name" -}}
{{- default "switchboard" .values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "switchboard.fullname" -}}
{{- if .values.fullnameOverride -}}
{{- .values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "switchboard.name" . -}}
{{- if contains $name .root.Release.Name -}}
{{- .root.Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .root.Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "switchboard.mode" -}}
{{- default "sidecar" .values.mode -}}
{{- end -}}

{{- define "switchboard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "switchboard.name" . }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{- define "switchboard.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "switchboard.selectorLabels" . }}
app.kubernetes.io/version: {{ .values.image.tag | default .root.Chart.AppVersion | quote }}
app.kubernetes.io/component: {{ include "switchboard.mode" . }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
{{- end -}}

{{- define "switchboard.image" -}}
{{- $img := .image | default .values.image -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (toString ($img.tag | default .root.Chart.AppVersion)) -}}
{{- end -}}
{{- end -}}

{{- define "switchboard.configMapName" -}}
{{- .values.existingConfigMap | default (printf "%s-config" (include "switchboard.fullname" .)) -}}
{{- end -}}

{{- define "switchboard.configDir" -}}
/etc/switchboard
{{- end -}}

{{- define "switchboard.serviceAccountName" -}}
{{- if .values.serviceAccount.create -}}
{{- default (include "switchboard.fullname" .) .values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* true or false: whether the pod mounts its ServiceAccount token. */}}
{{- define "switchboard.automountToken" -}}
{{- $a := .values.serviceAccount.automountServiceAccountToken -}}
{{- if kindIs "bool" $a -}}
{{- $a -}}
{{- else -}}
{{- and .values.vault.enabled (not .values.vault.tokenAudience) -}}
{{- end -}}
{{- end -}}

{{/* "true" or nothing: whether the switchboard container gets GOMAXPROCS
from its CPU limit (goMaxProcsFromCPULimit, resources.limits.cpu set, no
GOMAXPROCS in env). Without it, serve runs on one processor. */}}
{{- define "switchboard.goMaxProcsFromCPULimit" -}}
{{- $limits := (.values.resources | default dict).limits | default dict -}}
{{- if and .values.goMaxProcsFromCPULimit $limits.cpu -}}
{{- $set := false -}}
{{- range .values.env -}}
{{- if eq (toString .name) "GOMAXPROCS" -}}
{{- $set = true -}}
{{- end -}}
{{- end -}}
{{- if not $set -}}
true
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The host the MCP listener binds. */}}
{{- define "switchboard.listenHost" -}}
{{- if .values.listenHost -}}
{{- .values.listenHost -}}
{{- else if eq (include "switchboard.mode" .) "gateway" -}}
0.0.0.0
{{- else -}}
127.0.0.1
{{- end -}}
{{- end -}}

{{/* The URL the app container (sidecar mode) uses. */}}
{{- define "switchboard.mcpURL" -}}
{{- $host := include "switchboard.listenHost" . -}}
{{- if has $host (list "0.0.0.0" "[::]" "::" "") -}}
{{- $host = "127.0.0.1" -}}
{{- end -}}
{{- printf "http://%s:%d/mcp" $host (int .values.ports.mcp) -}}
{{- end -}}

{{/* The chart's own top-level values. Every other top-level value belongs
to the config file: a client's file given with -f (claude_desktop_config.json,
a VS Code mcp.json, a Goose config.yaml ...) lands in the config as it is,
and switchboard reads it as it reads that client's file. The list equals
the properties of values.schema.json (TestOwnValuesMatchSchema). */}}
{{- define "switchboard.ownValues" -}}
global mode nameOverride fullnameOverride image imagePullSecrets config mcpServers existingConfigMap configKey rollOnConfigChange ports listenHost adminListenHost extraArgs env envFrom secretMounts extraVolumes extraVolumeMounts vault cloud serviceAccount app nativeSidecar replicaCount sessionKey revisionHistoryLimit strategy podAnnotations podLabels podSecurityContext securityContext resources goMaxProcsFromCPULimit writableDirs probes preStopSleepSeconds terminationGracePeriodSeconds nodeSelector tolerations affinity topologySpreadConstraints priorityClassName service extraAllowedHosts ingress autoscaling podDisruptionBudget networkPolicy
{{- end -}}

{{/* The top-level values that belong to the config file (see ownValues),
as a dict. */}}
{{- define "switchboard.fileValues" -}}
{{- $own := splitList " " (include "switchboard.ownValues" .) -}}
{{- $out := dict -}}
{{- range $k, $v := .values -}}
{{- if not (has $k $own) -}}
{{- $_ := set $out $k $v -}}
{{- end -}}
{{- end -}}
{{- toJson $out -}}
{{- end -}}

{{/* "true" or nothing: whether text (a string config) is TOML, told apart
the way switchboard tells it: its first line that is not blank or a comment
is a [table] header or a key = value pair (Codex CLI's config.toml). */}}
{{- define "switchboard.looksLikeTOML" -}}
{{- $line := regexFind "(?m)^[ \\t]*[^#\\s].*$" . | trim -}}
{{- if or (regexMatch "^\\[\\[?\\s*[A-Za-z0-9_.\"'-][^\\]]*\\]\\]?\\s*(#.*)?$" $line) (regexMatch "^(\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+)(\\s*\\.\\s*(\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+))*\\s*=" $line) -}}
true
{{- end -}}
{{- end -}}

{{/* "true" or nothing: whether config is a string of JSON with comments or
trailing commas (a VS Code mcp.json, Zed's settings.json), which switchboard
reads and the chart cannot: it goes into the ConfigMap as written. */}}
{{- define "switchboard.configVerbatim" -}}
{{- if kindIs "string" .values.config -}}
{{- $text := trim .values.config -}}
{{- if or (hasPrefix "//" $text) (hasPrefix "/*" $text) -}}
true
{{- else if and (hasPrefix "{" $text) (hasKey (fromJson $text) "Error") (regexMatch "//|/\\*|,\\s*[}\\]]" $text) -}}
true
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The config as the chart reads it, as YAML: config (a map, or a whole
JSON, YAML or TOML file as a string, from --set-file config=servers.json),
with the top-level values that belong to the config file (a client's file
given with -f, see ownValues) and the servers of a top-level mcpServers
value (helm -f servers.yaml, a plain mcpServers file) added; a server named
in both is the top-level one. An empty mcpServers is left out, so it cannot
stand beside another client's servers (VS Code's servers). A string config
the chart cannot read (configVerbatim) reads as {}. */}}
{{- define "switchboard.config" -}}
{{- $cfg := .values.config | default dict -}}
{{- if include "switchboard.configVerbatim" . -}}
{{- $cfg = dict -}}
{{- else if kindIs "string" $cfg -}}
{{- $text := trim $cfg -}}
{{- if hasPrefix "{" $text -}}
{{- $cfg = fromJson $text -}}
{{- else if include "switchboard.looksLikeTOML" $text -}}
{{- $cfg = fromToml $text -}}
{{- else -}}
{{- $cfg = fromYaml $text -}}
{{- end -}}
{{- if hasKey $cfg "Error" -}}
{{- fail (printf "config: a string config (--set-file config=FILE) must be a whole switchboard config file, a JSON, YAML or TOML object such as {\"mcpServers\": {...}}; it does not parse as one: %s" (get $cfg "Error")) -}}
{{- end -}}
{{- else -}}
{{- $cfg = deepCopy $cfg -}}
{{- end -}}
{{- range $k, $v := include "switchboard.fileValues" . | fromJson -}}
{{- $_ := set $cfg $k $v -}}
{{- end -}}
{{- with .values.mcpServers -}}
{{- if kindIs "slice" . -}}
{{- if $cfg.mcpServers -}}
{{- fail "mcpServers: a list of servers (Continue's shape) cannot be added to the servers of config.mcpServers; give the servers in one place" -}}
{{- end -}}
{{- $_ := set $cfg "mcpServers" . -}}
{{- else -}}
{{- if kindIs "slice" $cfg.mcpServers -}}
{{- fail "mcpServers: config.mcpServers is a list of servers (Continue's shape), to which the servers of mcpServers cannot be added; give the servers in one place" -}}
{{- end -}}
{{- $servers := deepCopy ($cfg.mcpServers | default dict) -}}
{{- range $name, $server := . -}}
{{- $_ := set $servers $name $server -}}
{{- end -}}
{{- $_ := set $cfg "mcpServers" $servers -}}
{{- end -}}
{{- end -}}
{{- if and (hasKey $cfg "mcpServers") (empty $cfg.mcpServers) -}}
{{- $_ := unset $cfg "mcpServers" -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* The config file as YAML. Gateway mode adds allowedHosts (DNS
rebinding protection) unless the config sets them. sessionKey.existingSecret
adds sessionKey and requestStateKey, each unless the config sets it. */}}
{{- define "switchboard.configYAML" -}}
{{- if include "switchboard.configVerbatim" . -}}
{{- include "switchboard.configVerbatimText" . -}}
{{- else -}}
{{- $cfg := include "switchboard.config" . | fromYaml -}}
{{- if include "switchboard.sessionKeySecret" . -}}
{{- range $key := list "sessionKey" "requestStateKey" -}}
{{- if not (hasKey $cfg $key) -}}
{{- $_ := set $cfg $key (include "switchboard.sessionKeyRef" $) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (eq (include "switchboard.mode" .) "gateway") (not (hasKey $cfg "allowedHosts")) -}}
{{- $svc := include "switchboard.fullname" . -}}
{{- $ns := .root.Release.Namespace -}}
{{- $hosts := list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) "localhost" "127.0.0.1" -}}
{{- if .values.ingress.enabled -}}
{{- range .values.ingress.hosts -}}
{{- if .host -}}
{{- $hosts = append $hosts .host -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range .values.extraAllowedHosts -}}
{{- $hosts = append $hosts . -}}
{{- end -}}
{{- $_ := set $cfg "allowedHosts" ($hosts | uniq) -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}
{{- end -}}

{{/* A string config the chart cannot read (configVerbatim), as written. The
chart cannot add to it: when it would (servers or other values beside it,
sessionKey.existingSecret, gateway mode's allowedHosts) and the file does
not set them itself, the render fails and says so. */}}
{{- define "switchboard.configVerbatimText" -}}
{{- $text := trim .values.config -}}
{{- $needs := list -}}
{{- if .values.mcpServers -}}
{{- $needs = append $needs "the servers of mcpServers" -}}
{{- end -}}
{{- with include "switchboard.fileValues" . | fromJson -}}
{{- $needs = append $needs (printf "the values %s" (keys . | sortAlpha | join ", ")) -}}
{{- end -}}
{{- if include "switchboard.sessionKeySecret" . -}}
{{- range $key := list "sessionKey" "requestStateKey" -}}
{{- if not (contains (printf "%q" $key) $text) -}}
{{- $needs = append $needs $key -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and (eq (include "switchboard.mode" .) "gateway") (not (contains "\"allowedHosts\"" $text)) -}}
{{- $needs = append $needs "allowedHosts (gateway mode)" -}}
{{- end -}}
{{- if $needs -}}
{{- fail (printf "config: the chart would add %s to this config, but it is JSON with comments or trailing commas, which switchboard reads and the chart cannot edit; set them in the file itself, or remove its comments" (join ", " $needs)) -}}
{{- end -}}
{{- $text -}}
{{- end -}}

{{/* Pod annotations: the user's, plus the config checksum when
rollOnConfigChange is on. Renders a YAML map or nothing. */}}
{{- define "switchboard.podAnnotations" -}}
{{- $ann := deepCopy (.values.podAnnotations | default dict) -}}
{{- if and .values.rollOnConfigChange (not .values.existingConfigMap) -}}
{{- $_ := set $ann "checksum/switchboard-config" (include "switchboard.configYAML" . | sha256sum) -}}
{{- end -}}
{{- if $ann -}}
{{- toYaml $ann -}}
{{- end -}}
{{- end -}}

{{/* The shutdown timeout of the config in whole seconds, rounded up. */}}
{{- define "switchboard.shutdownSeconds" -}}
{{- $ms := 10000 -}}
{{- $cfg := include "switchboard.config" . | fromYaml -}}
{{- if hasKey $cfg "shutdownTimeout" -}}
{{- $ms = int $cfg.shutdownTimeout -}}
{{- end -}}
{{- div (add $ms 999) 1000 -}}
{{- end -}}

{{- define "switchboard.terminationGracePeriodSeconds" -}}
{{- if kindIs "invalid" .values.terminationGracePeriodSeconds -}}
{{- max 30 (add (int .values.preStopSleepSeconds) (int (include "switchboard.shutdownSeconds" .)) 5) -}}
{{- else -}}
{{- int .values.terminationGracePeriodSeconds -}}
{{- end -}}
{{- end -}}

{{/* "true" or nothing: whether the switchboard container gets the preStop
sleep. The sleep action needs Kubernetes 1.30+ (.Capabilities: the
cluster's version, or --kube-version with helm template); below that the
hook is left out rather than rejected by the apiserver. */}}
{{- define "switchboard.preStopSleep" -}}
{{- if and (gt (int .values.preStopSleepSeconds) 0) (semverCompare ">=1.30.0-0" .root.Capabilities.KubeVersion.Version) -}}
true
{{- end -}}
{{- end -}}

{{/* The Secret of sessionKey.existingSecret, or nothing. */}}
{{- define "switchboard.sessionKeySecret" -}}
{{- ((.values.sessionKey | default dict).existingSecret | default "") -}}
{{- end -}}

{{/* The reference the config reads the session key with: the variable the
container gets from sessionKey.existingSecret. */}}
{{- define "switchboard.sessionKeyRef" -}}
secret://env/SWITCHBOARD_SESSION_KEY
{{- end -}}

{{/* "true" or nothing: whether the rendered config gives sessionKey and
requestStateKey references every replica resolves alike
(sessionKey.existingSecret, or both keys in config). Nothing with
existingConfigMap alone: the chart cannot read that config. */}}
{{- define "switchboard.sessionKeyShared" -}}
{{- if include "switchboard.sessionKeySecret" . -}}
true
{{- else if not .values.existingConfigMap -}}
{{- $cfg := include "switchboard.config" . | fromYaml -}}
{{- if and (hasKey $cfg "sessionKey") (hasKey $cfg "requestStateKey") -}}
true
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Fails the render in gateway mode with more than one replica and no key
the replicas share (sessionKey.existingSecret, or config.sessionKey and
config.requestStateKey), unless sessionKey.required is false. Without one,
each pod seals session IDs with a key of its own: no replica resumes
another's sessions, and a session ends with its pod. */}}
{{- define "switchboard.requireSessionKey" -}}
{{- $sk := .values.sessionKey | default dict -}}
{{- $required := or (not (kindIs "bool" $sk.required)) $sk.required -}}
{{- $replicas := "" -}}
{{- if .values.autoscaling.enabled -}}
{{- $replicas = printf "autoscaling.enabled, up to %d replicas" (int .values.autoscaling.maxReplicas) -}}
{{- else if gt (int .values.replicaCount) 1 -}}
{{- $replicas = printf "replicaCount %d" (int .values.replicaCount) -}}
{{- end -}}
{{- if and $required $replicas (eq (include "switchboard.mode" .) "gateway") (not (include "switchboard.sessionKeyShared" .)) -}}
{{- fail (printf "sessionKey: gateway mode with more than one replica (%s) needs a key the replicas share, and none is set. Without it each pod seals session IDs with a key of its own: no replica can resume another's sessions (or accept its 2026-07-28 request states), so a session does not survive the loss of its pod. Set sessionKey.existingSecret to a Secret in namespace %s whose key %q (sessionKey.secretKey) holds at least 32 bytes, e.g. kubectl -n %s create secret generic %s-session-key --from-literal=%s=\"$(openssl rand -base64 48)\"; the chart then sets config.sessionKey and config.requestStateKey to %s. Or set both config.sessionKey and config.requestStateKey to secret:// references. With existingConfigMap (whose config the chart cannot read), or to run without a shared key, set sessionKey.required=false." $replicas .root.Release.Namespace ($sk.secretKey | default "session-key") .root.Release.Namespace (include "switchboard.fullname" .) ($sk.secretKey | default "session-key") (include "switchboard.sessionKeyRef" .)) -}}
{{- end -}}
{{- end -}}

{{/* Ingress annotations: ingress.annotations, plus ingress-nginx's hash on
the Mcp-Session-Id header (the controller's http-snippet defines
$mcp_session_hash, see README.md) with ingress.sessionRouting and a className that
names nginx, unless the annotations set upstream-hash-by. Renders a YAML
map or nothing. */}}
{{- define "switchboard.ingressAnnotations" -}}
{{- $ing := .values.ingress -}}
{{- $ann := deepCopy ($ing.annotations | default dict) -}}
{{- $hashBy := "nginx.ingress.kubernetes.io/upstream-hash-by" -}}
{{- if and $ing.sessionRouting (contains "nginx" ($ing.className | default "")) (not (hasKey $ann $hashBy)) -}}
{{- $_ := set $ann $hashBy "$mcp_session_hash" -}}
{{- end -}}
{{- if $ann -}}
{{- toYaml $ann -}}
{{- end -}}
{{- end -}}
