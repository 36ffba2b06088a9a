{{/* The release's full name: the release name, with "-sluice" unless it holds it. */}}
{{- define "sluice.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The name of a cluster-scoped object of the release: (list . BASE)
gives <namespace>.<BASE>.<node>. Releases are one per tenant, in namespaces
of their own, and two of them may share a release name: cluster-scoped
names carry the release's namespace (a label, so no dot of its own makes
two names meet) and its node, so that no release can collide with, adopt or
delete another's objects. Each part is at most 63 characters (a namespace,
the full name and its suffix, config.NodeName in the schema): the whole
stays under the API's 253. */}}
{{- define "sluice.clusterName" -}}
{{- $ := index . 0 -}}
{{- printf "%s.%s.%s" $.Release.Namespace (index . 1) $.Values.config.NodeName -}}
{{- end -}}

{{- define "sluice.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "sluice.labels" -}}
{{ include "sluice.selectorLabels" . }}
app.kubernetes.io/version: {{ include "sluice.tag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "sluice.tag" -}}
{{- default .Chart.AppVersion .Values.image.tag -}}
{{- end -}}

{{- /* sluice-vk's image: pinned by digest when image.digest is set (a tag
can be moved to other content; a digest cannot) */}}
{{- define "sluice.image" -}}
{{- with .Values.image.digest -}}
{{- printf "%s@%s" $.Values.image.repository . -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (include "sluice.tag" .) -}}
{{- end -}}
{{- end -}}

{{- define "sluice.serviceAccount" -}}
{{- default (include "sluice.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The tenant namespace, or "" when the node is not confined. */}}
{{- define "sluice.tenant" -}}
{{- .Values.config.Network.TenantNamespace | default "" -}}
{{- end -}}

{{/* Where the shadows' credentials live: the tenant namespace on a confined
node, else the release's namespace (sluice-vk copies them from there). */}}
{{- define "sluice.credentialsNamespace" -}}
{{- include "sluice.tenant" . | default .Release.Namespace -}}
{{- end -}}

{{- define "sluice.keySecret" -}}
{{- default (printf "%s-ssh" (include "sluice.fullname" .)) .Values.credentials.existingSecret -}}
{{- end -}}

{{- define "sluice.loginHostKeys" -}}
{{- printf "%s-login-hosts" (include "sluice.fullname" .) -}}
{{- end -}}

{{- define "sluice.nodeHostKeys" -}}
{{- printf "%s-node-hosts" (include "sluice.fullname" .) -}}
{{- end -}}

{{- define "sluice.bastionHostKeys" -}}
{{- printf "%s-bastion-hosts" (include "sluice.fullname" .) -}}
{{- end -}}

{{- define "sluice.keytabSecret" -}}
{{- default (printf "%s-keytab" (include "sluice.fullname" .)) .Values.credentials.existingKeytabSecret -}}
{{- end -}}

{{/* "true" when the site account logs in with Kerberos (Network.SSH.Auth). */}}
{{- define "sluice.kerberos" -}}
{{- if eq (toString ((((.Values.config).Network).SSH).Auth)) "kerberos" -}}true{{- end -}}
{{- end -}}

{{/* "true" when the kubelet API's serving certificate comes from
CertificateSigningRequests (config.Node.KubeletAPI.Certificate csr, the
default unless CertFile is set). */}}
{{- define "sluice.kubeletCSR" -}}
{{- $api := (((.Values.config).Node).KubeletAPI) | default dict -}}
{{- if eq (toString ($api.Certificate | default (ternary "file" "csr" (not (empty $api.CertFile))))) "csr" -}}true{{- end -}}
{{- end -}}

{{/* The tunnels need the shadows' credentials. */}}
{{- define "sluice.tunnel" -}}
{{- if and .Values.config.Network.EnableTunnel (ne (.Values.config.Network.ShadowMode | default "ssh") "none") -}}true{{- end -}}
{{- end -}}

{{/* "true" when the chart deploys the tunnel gateway: gateway.enabled,
with the tunnels on. */}}
{{- define "sluice.gateway" -}}
{{- if and .Values.gateway.enabled (include "sluice.tunnel" .) -}}true{{- end -}}
{{- end -}}

{{- define "sluice.gatewayName" -}}
{{- printf "%s-gateway" (include "sluice.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sluice.gatewaySelectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}-gateway
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "sluice.gatewayLabels" -}}
{{ include "sluice.gatewaySelectorLabels" . }}
app.kubernetes.io/component: gateway
app.kubernetes.io/version: {{ include "sluice.tag" . | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The gateway's address as shadows dial it: its Service, by the name
that resolves from every namespace. */}}
{{- define "sluice.gatewayAddress" -}}
{{- printf "%s.%s.svc:%d" (include "sluice.gatewayName" .) .Release.Namespace (int .Values.gateway.port) -}}
{{- end -}}

{{/* The ConfigMap of the gateway's host keys, which the gateway publishes
where the shadows read their credentials from. */}}
{{- define "sluice.gatewayHostKeys" -}}
{{- printf "%s-host-keys" (include "sluice.gatewayName" .) -}}
{{- end -}}

{{- define "sluice.gatewayHostKeySecret" -}}
{{- default (printf "%s-host-key" (include "sluice.gatewayName" .)) .Values.gateway.hostKeySecret -}}
{{- end -}}

{{- define "sluice.gatewayImage" -}}
{{- $tag := default (include "sluice.tag" .) .Values.gateway.image.tag -}}
{{- $repo := .Values.gateway.image.repository -}}
{{- /* sluice-vk from a registry of the site's: the gateway from the same
place, as the shadows, unless gateway.image names its own */ -}}
{{- if and (eq $repo "ghcr.io/sluice-hpc/sluice-tunnel") (ne .Values.image.repository "ghcr.io/sluice-hpc/sluice-vk") -}}
{{- $repo = printf "%s/sluice-tunnel" (dir .Values.image.repository) -}}
{{- end -}}
{{- with .Values.gateway.image.digest -}}
{{- printf "%s@%s" $repo . -}}
{{- else -}}
{{- printf "%s:%s" $repo $tag -}}
{{- end -}}
{{- end -}}

{{/* The configuration file: config with what the chart fills in. */}}
{{- define "sluice.config" -}}
{{- $c := deepCopy .Values.config -}}
{{- $net := $c.Network | default dict -}}
{{- $ssh := $net.SSH | default dict -}}
{{- $node := $c.Node | default dict -}}
{{- /* with the gateway, the shadows name none of the site's credentials:
they carry the gateway's address and host keys only */}}
{{- $shadowsLogIn := and (include "sluice.tunnel" .) (not (include "sluice.gateway" .)) -}}
{{- if include "sluice.gateway" . -}}
{{- $gw := $net.Gateway | default dict -}}
{{- $_ := set $gw "Address" (include "sluice.gatewayAddress" .) -}}
{{- $_ := set $gw "HostKeys" (include "sluice.gatewayHostKeys" .) -}}
{{- $_ := set $net "Gateway" $gw -}}
{{- end -}}
{{- if include "sluice.kerberos" . -}}
{{- $_ := set $ssh "KeytabFile" ($ssh.KeytabFile | default "/etc/sluice/krb5/keytab") -}}
{{- if $shadowsLogIn -}}
{{- $_ := set $ssh "KeytabSecret" ($ssh.KeytabSecret | default (include "sluice.keytabSecret" .)) -}}
{{- end -}}
{{- else -}}
{{- $_ := set $ssh "KeyFile" ($ssh.KeyFile | default "/etc/sluice/ssh/ssh-privatekey") -}}
{{- end -}}
{{- if .Values.credentials.bastionKnownHosts -}}
{{- $b := $ssh.Bastion | default dict -}}
{{- $_ := set $b "KnownHostsFile" ($b.KnownHostsFile | default "/etc/sluice/bastion_known_hosts/known_hosts") -}}
{{- if $shadowsLogIn -}}
{{- $_ := set $b "HostKeys" ($b.HostKeys | default (include "sluice.bastionHostKeys" .)) -}}
{{- end -}}
{{- $_ := set $ssh "Bastion" $b -}}
{{- end -}}
{{- $_ := set $ssh "KnownHostsFile" ($ssh.KnownHostsFile | default "/etc/sluice/known_hosts/known_hosts") -}}
{{- if .Values.credentials.nodeKnownHosts -}}
{{- $_ := set $ssh "NodeKnownHostsFile" ($ssh.NodeKnownHostsFile | default "/etc/sluice/node_known_hosts/known_hosts") -}}
{{- end -}}
{{- if include "sluice.certificate" . -}}
{{- $_ := set $ssh "CertificateFile" ($ssh.CertificateFile | default "/etc/sluice/ssh/ssh-certificate") -}}
{{- $_ := set $ssh "KeySecretCertificate" true -}}
{{- end -}}
{{- if and $shadowsLogIn (not (include "sluice.kerberos" .)) -}}
{{- $_ := set $ssh "KeySecret" ($ssh.KeySecret | default (include "sluice.keySecret" .)) -}}
{{- end -}}
{{- if $shadowsLogIn -}}
{{- $_ := set $ssh "LoginHostKeys" ($ssh.LoginHostKeys | default (include "sluice.loginHostKeys" .)) -}}
{{- if .Values.credentials.nodeKnownHosts -}}
{{- $_ := set $ssh "NodeHostKeys" ($ssh.NodeHostKeys | default (include "sluice.nodeHostKeys" .)) -}}
{{- end -}}
{{- end -}}
{{- if $net.TenantNamespace -}}
{{- $_ := set $net "RefuseForeignPods" true -}}
{{- end -}}
{{- /* the shadows' tunnel image is sluice-vk's sibling, most often in the
same registry: the same Secrets' names, read in the shadows' namespace */}}
{{- if and (include "sluice.tunnel" .) .Values.imagePullSecrets (not (hasKey $net "ShadowImagePullSecrets")) -}}
{{- $names := list -}}
{{- range .Values.imagePullSecrets -}}
{{- $names = append $names .name -}}
{{- end -}}
{{- $_ := set $net "ShadowImagePullSecrets" $names -}}
{{- end -}}
{{- /* sluice-vk from a registry of the site's: the shadows' tunnel image
from the same place (the repository's directory, sluice-vk's tag), unless
the configuration names its own */}}
{{- if and (include "sluice.tunnel" .) (ne .Values.image.repository "ghcr.io/sluice-hpc/sluice-vk") (not $ssh.TunnelImage) -}}
{{- $_ := set $ssh "TunnelImage" (printf "%s/sluice-tunnel:%s" (dir .Values.image.repository) (include "sluice.tag" .)) -}}
{{- end -}}
{{- if and .Values.metrics.enabled (not $node.MetricsListen) -}}
{{- $_ := set $node "MetricsListen" (printf ":%d" (int .Values.metrics.port)) -}}
{{- end -}}
{{- $_ := set $net "SSH" $ssh -}}
{{- $_ := set $c "Network" $net -}}
{{- $_ := set $c "Node" $node -}}
{{- toYaml $c -}}
{{- end -}}

{{/* "true" when the site account logs in with an SSH certificate: given as
credentials.certificate, or in the existing Secret (KeySecretCertificate). */}}
{{- define "sluice.certificate" -}}
{{- if or .Values.credentials.certificate ((((.Values.config).Network).SSH).KeySecretCertificate) -}}true{{- end -}}
{{- end -}}

{{/* Whether sluice-vk copies credentials into shadow namespaces: on a node
that is not confined, with the tunnel on and ReplicateCredentials. The
uninstall hook then deletes every copy of a credential of the release's
namespace (what is copied, the bastion's key and names set in
config.Network.SSH included, is sluice-vk's to say, not a list here). */}}
{{- define "sluice.copiesCredentials" -}}
{{- $ssh := ((.Values.config.Network).SSH) | default dict -}}
{{- if and (include "sluice.tunnel" .) (not (include "sluice.tenant" .)) (ne (toString $ssh.ReplicateCredentials) "false") -}}true{{- end -}}
{{- end -}}

{{/* The rules of the namespaces of the node's pods and of their shadows:
cluster-wide on a node that is not confined, in the tenant namespace's Role
on a confined one. */}}
{{- define "sluice.podRules" }}
  # the service account tokens of the pods (projected volumes), bound to
  # the pod
  - apiGroups: [""]
    resources: [serviceaccounts/token]
    verbs: [create]
  # the shadows' Deployment, Service, node ConfigMap and credentials
  # (copied, or the published key); the pods' ConfigMaps and Secrets read
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [get, list, create, update, patch, delete]
  - apiGroups: [""]
    resources: [secrets]
    verbs: [get, create, update, delete]
  - apiGroups: [""]
    resources: [services]
    verbs: [get, list, create, update, delete]
  - apiGroups: [apps]
    resources: [deployments]
    verbs: [get, list, create, update, delete]
  # the node's pods: the job finalizer, deletion once the job is cleaned up;
  # the shadow pods: nudged to read their node, their readiness gate, the
  # kept containers' logs
  - apiGroups: [""]
    resources: [pods]
    verbs: [patch, delete]
  - apiGroups: [""]
    resources: [pods/status]
    verbs: [patch]
  - apiGroups: [""]
    resources: [pods/log]
    verbs: [get]
{{- end -}}

{{/* The port of a listen address (config key .key, address .value, .def
when empty), for the Deployment's named ports that the NetworkPolicy and
the metrics Service target: they must be where sluice-vk listens. "0" for a
free port picked at start, which cannot be named. */}}
{{- define "sluice.listenPort" -}}
{{- if not .value -}}
{{- .def -}}
{{- else -}}
{{- $port := regexFind ":[0-9]+$" (toString .value) | trimPrefix ":" -}}
{{- if or (not $port) (gt (int $port) 65535) -}}
{{- fail (printf "config.%s %q: want host:port" .key .value) -}}
{{- end -}}
{{- int $port -}}
{{- end -}}
{{- end -}}

{{/* What the gateway reads to make a shadow's grant: cluster-wide on a node
that is not confined, in the tenant namespace's Role on a confined one. */}}
{{- define "sluice.gatewayGrantRules" }}
  # the shadow pod, its ReplicaSet and Deployment, its node ConfigMap (and,
  # in the release's namespace, the records of the shadow namespaces)
  - apiGroups: [""]
    resources: [pods, configmaps]
    verbs: [get]
  - apiGroups: [apps]
    resources: [replicasets, deployments]
    verbs: [get]
  # the node ConfigMaps followed, so that a requeued job's tunnels follow it
  - apiGroups: [""]
    resources: [configmaps]
    verbs: [list, watch]
{{- end -}}

{{/* HOST:PORT of (list host port), an IPv6 address in brackets. */}}
{{- define "sluice.hostPort" -}}
{{- $host := index . 0 | toString -}}
{{- if contains ":" $host -}}
{{- printf "[%s]:%v" $host (index . 1) -}}
{{- else -}}
{{- printf "%s:%v" $host (index . 1) -}}
{{- end -}}
{{- end -}}

{{/* sluice.siteVolumeMounts: where sluice-vk (and `sluice-vk doctor` of
helm test) read the configuration and what reaches the site: the key or
keytab and the pinned host keys. */}}
{{- define "sluice.siteVolumeMounts" -}}
- name: config
  mountPath: /etc/sluice/config
  readOnly: true
{{- if include "sluice.kerberos" . }}
- name: keytab
  mountPath: /etc/sluice/krb5
  readOnly: true
{{- else }}
- name: ssh
  mountPath: /etc/sluice/ssh
  readOnly: true
{{- end }}
{{- if .Values.credentials.bastionKnownHosts }}
- name: bastion-known-hosts
  mountPath: /etc/sluice/bastion_known_hosts
  readOnly: true
{{- end }}
- name: known-hosts
  mountPath: /etc/sluice/known_hosts
  readOnly: true
{{- if .Values.credentials.nodeKnownHosts }}
- name: node-known-hosts
  mountPath: /etc/sluice/node_known_hosts
  readOnly: true
{{- end }}
{{- end }}

{{/* sluice.siteVolumes: the volumes of sluice.siteVolumeMounts. */}}
{{- define "sluice.siteVolumes" -}}
- name: config
  configMap:
    name: {{ include "sluice.fullname" . }}-config
{{- if include "sluice.kerberos" . }}
- name: keytab
  secret:
    secretName: {{ include "sluice.keytabSecret" . }}
    defaultMode: 0440
    items:
      - key: keytab
        path: keytab
{{- else }}
- name: ssh
  secret:
    secretName: {{ include "sluice.keySecret" . }}
    defaultMode: 0440
    items:
      - key: ssh-privatekey
        path: ssh-privatekey
      {{- if include "sluice.certificate" . }}
      - key: ssh-certificate
        path: ssh-certificate
      {{- end }}
{{- end }}
{{- if .Values.credentials.bastionKnownHosts }}
- name: bastion-known-hosts
  configMap:
    name: {{ include "sluice.bastionHostKeys" . }}
{{- end }}
- name: known-hosts
  configMap:
    name: {{ include "sluice.loginHostKeys" . }}
{{- if .Values.credentials.nodeKnownHosts }}
- name: node-known-hosts
  configMap:
    name: {{ include "sluice.nodeHostKeys" . }}
{{- end }}
{{- end }}
