#!/usr/bin/env bash
# Installs the tools the deployment checks (`npm run test:deploy`) need into .local/tools/ (git-ignored), from the
# package registries only, without touching the system:
#   prometheus  prometheus + promtool, extracted from Debian's `prometheus` package (apt-get download + dpkg -x)
#   helm        helm v3, built from the Go module proxy (go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION)
#   kustomize   kustomize v5, built from the Go module proxy (sigs.k8s.io/kustomize/kustomize/v5)
#   schemas     Kubernetes JSON schemas (strict: unknown fields rejected) and their validator, from PyPI's
#               `kubernetes-validate` in a virtualenv; plus crd-validate (deploy/tools/crd-validate), a small Go
#               program that strictly decodes prometheus-operator resources (ServiceMonitor, PrometheusRule) into
#               their Go types from the Go module proxy
#   otelcol     otelcol-rag (deploy/tools/otelcol-validate), an OpenTelemetry Collector built from the Go module proxy
#               with the components deploy/observability/otel-collector/config.yaml uses, for `otelcol-rag validate`
#   all         everything above
# Idempotent: a tool whose stamp (.local/tools/stamps/<tool>-<version>) exists and whose binary runs is skipped, so a
# warm run takes seconds. Everything lands in .local/tools/bin/. Go builds use the ordinary Go module and build caches.
#
# usage: bash deploy/tools/install.sh {prometheus|helm|kustomize|schemas|otelcol|all}...
set -euo pipefail

root="$(cd "$(dirname "$0")/../.." && pwd)"
tools="${RAG_TOOLS_DIR:-$root/.local/tools}"
bin="$tools/bin"
stamps="$tools/stamps"
logs="$tools/logs"
mkdir -p "$bin" "$stamps" "$logs"

HELM_VERSION="${HELM_VERSION:-v3.19.5}"
KUSTOMIZE_VERSION="${KUSTOMIZE_VERSION:-v5.7.1}"
KUBERNETES_VALIDATE_VERSION="${KUBERNETES_VALIDATE_VERSION:-1.37.0}"
export GOFLAGS="${GOFLAGS:--buildvcs=false}"

say() { printf '[tools] %s\n' "$*"; }
die() { printf '[tools] ERROR: %s\n' "$*" >&2; exit 1; }
elapsed() { echo "$(( $(date +%s) - $1 ))s"; }

need_go() {
  command -v go >/dev/null 2>&1 || die "go is not on PATH: the Go toolchain is needed to build $1 from the Go module proxy"
}

# go install <module path>@<version> into $tools/go-bin, logging to $logs/<name>.log; prints the tail on failure.
go_build() {
  local name="$1" pkg="$2" version="$3" t0
  t0=$(date +%s)
  need_go "$name"
  say "$name $version: building with $(go version | cut -d' ' -f3) from the Go module proxy (minutes when cold; log: ${logs#"$root"/}/$name.log)"
  if ! GOBIN="$tools/go-bin" go install "$pkg@$version" >"$logs/$name.log" 2>&1; then
    tail -n 30 "$logs/$name.log" >&2
    die "$name: go install $pkg@$version failed"
  fi
  install -m 0755 "$tools/go-bin/$name" "$bin/$name"
  say "$name $version: built in $(elapsed "$t0")"
}

install_prometheus() {
  local stamp t0 deb version
  if [[ -x "$bin/promtool" ]] && ls "$stamps"/prometheus-* >/dev/null 2>&1 && "$bin/promtool" --version >/dev/null 2>&1; then
    say "prometheus: present ($("$bin/promtool" --version 2>&1 | head -n1))"
    return
  fi
  t0=$(date +%s)
  command -v apt-get >/dev/null 2>&1 || die "prometheus: apt-get not found (Debian's package is the source of promtool here)"
  local work="$tools/tmp/prometheus"
  rm -rf "$work" && mkdir -p "$work"
  say "prometheus: downloading Debian's package (apt-get download prometheus)"
  if ! (cd "$work" && apt-get download prometheus >"$logs/prometheus.log" 2>&1); then
    say "prometheus: package not in the apt lists; running apt-get update once"
    apt-get update >>"$logs/prometheus.log" 2>&1 || die "prometheus: apt-get update failed (see $logs/prometheus.log)"
    (cd "$work" && apt-get download prometheus >>"$logs/prometheus.log" 2>&1) || die "prometheus: apt-get download failed (see $logs/prometheus.log)"
  fi
  deb="$(ls "$work"/prometheus_*.deb)"
  version="$(dpkg-deb -f "$deb" Version)"
  rm -rf "$tools/prometheus" && mkdir -p "$tools/prometheus"
  dpkg -x "$deb" "$tools/prometheus"
  install -m 0755 "$tools/prometheus/usr/bin/promtool" "$bin/promtool"
  install -m 0755 "$tools/prometheus/usr/bin/prometheus" "$bin/prometheus"
  rm -rf "$work"
  rm -f "$stamps"/prometheus-* && touch "$stamps/prometheus-$version"
  say "prometheus: $version installed in $(elapsed "$t0") ($("$bin/promtool" --version 2>&1 | head -n1))"
}

install_helm() {
  if [[ -x "$bin/helm" && -e "$stamps/helm-$HELM_VERSION" ]] && "$bin/helm" version --short >/dev/null 2>&1; then
    say "helm: present ($HELM_VERSION)"
    return
  fi
  go_build helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"
  rm -f "$stamps"/helm-* && touch "$stamps/helm-$HELM_VERSION"
}

install_kustomize() {
  if [[ -x "$bin/kustomize" && -e "$stamps/kustomize-$KUSTOMIZE_VERSION" ]] && "$bin/kustomize" version >/dev/null 2>&1; then
    say "kustomize: present ($KUSTOMIZE_VERSION)"
    return
  fi
  go_build kustomize sigs.k8s.io/kustomize/kustomize/v5 "$KUSTOMIZE_VERSION"
  rm -f "$stamps"/kustomize-* && touch "$stamps/kustomize-$KUSTOMIZE_VERSION"
}

install_schemas() {
  local t0 venv="$tools/kubernetes-validate"
  if [[ -x "$bin/kubernetes-validate" && -e "$stamps/kubernetes-validate-$KUBERNETES_VALIDATE_VERSION" ]] && "$bin/kubernetes-validate" --version >/dev/null 2>&1; then
    say "schemas: kubernetes-validate present ($KUBERNETES_VALIDATE_VERSION)"
  else
    t0=$(date +%s)
    command -v python3 >/dev/null 2>&1 || die "schemas: python3 not found (kubernetes-validate is a PyPI package)"
    say "schemas: installing kubernetes-validate $KUBERNETES_VALIDATE_VERSION (bundles the Kubernetes JSON schemas) into a virtualenv"
    rm -rf "$venv"
    python3 -m venv "$venv" >"$logs/kubernetes-validate.log" 2>&1 || die "schemas: python3 -m venv failed (see $logs/kubernetes-validate.log)"
    "$venv/bin/pip" install --disable-pip-version-check -q "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION" >>"$logs/kubernetes-validate.log" 2>&1 \
      || { tail -n 20 "$logs/kubernetes-validate.log" >&2; die "schemas: pip install kubernetes-validate failed"; }
    ln -sf "$venv/bin/kubernetes-validate" "$bin/kubernetes-validate"
    rm -f "$stamps"/kubernetes-validate-* && touch "$stamps/kubernetes-validate-$KUBERNETES_VALIDATE_VERSION"
    say "schemas: kubernetes-validate installed in $(elapsed "$t0")"
  fi

  # crd-validate is built from this repository's sources (deploy/tools/crd-validate); rebuilt when they change.
  build_local_go crd-validate crd-validate "prometheus-operator Go types"
}

# Builds a Go program of this repository (deploy/tools/<dir>) into $bin/<name>; rebuilt when its sources change.
build_local_go() {
  local dir="$1" name="$2" what="$3" src sum t0
  src="$root/deploy/tools/$dir"
  sum="$(cat "$src/go.mod" "$src/go.sum" "$src"/*.go | sha256sum | cut -c1-16)"
  if [[ -x "$bin/$name" && -e "$stamps/$name-$sum" ]]; then
    say "$name: present ($sum)"
    return
  fi
  t0=$(date +%s)
  need_go "$name"
  say "$name: building ($what, from the Go module proxy; log: ${logs#"$root"/}/$name.log)"
  (cd "$src" && go build -o "$bin/$name" . >"$logs/$name.log" 2>&1) \
    || { tail -n 30 "$logs/$name.log" >&2; die "$name: go build failed"; }
  rm -f "$stamps/$name"-* && touch "$stamps/$name-$sum"
  say "$name: built in $(elapsed "$t0")"
}

[[ $# -gt 0 ]] || die "usage: bash deploy/tools/install.sh {prometheus|helm|kustomize|schemas|otelcol|all}..."
start=$(date +%s)
for what in "$@"; do
  case "$what" in
    prometheus) install_prometheus ;;
    helm) install_helm ;;
    kustomize) install_kustomize ;;
    schemas) install_schemas ;;
    otelcol) build_local_go otelcol-validate otelcol-rag "an OpenTelemetry Collector with the config's components" ;;
    all) install_prometheus; install_schemas; install_helm; install_kustomize; build_local_go otelcol-validate otelcol-rag "an OpenTelemetry Collector with the config's components" ;;
    *) die "unknown tool '$what' (expected prometheus, helm, kustomize, schemas, otelcol or all)" ;;
  esac
done
say "done in $(elapsed "$start"); tools in ${bin#"$root"/}: $(ls "$bin" | tr '\n' ' ')"
