#!/usr/bin/env bash
# Sourced by the scripts that run upstream's kube-apiserver as the reference
# (hack/local-cluster.sh with CLUSTER_APISERVER=reference, hack/bench/fairness.sh,
# hack/bench/data-scale.sh, e2e/aggregation.sh with E2E_AGG_REFERENCE=1).
#
# reference_pki DIR SERVER KUBECONFIG: what kapi makes for itself on first start, for
# kube-apiserver: in DIR a CA (ca.crt/key), a serving certificate for 127.0.0.1 and localhost
# (apiserver.crt/key), the service-account key (sa.key) and an admin client certificate in
# system:masters (admin.crt/key); and KUBECONFIG, an admin kubeconfig for SERVER.
reference_pki() {
  local P=$1 server=$2 kubeconfig=$3
  mkdir -p "$P"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$P/ca.key" -out "$P/ca.crt" -days 30 \
    -subj "/CN=kubernetes-ca" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout "$P/apiserver.key" -out "$P/apiserver.csr" -subj "/CN=kube-apiserver" 2>/dev/null
  openssl x509 -req -in "$P/apiserver.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -out "$P/apiserver.crt" -days 30 \
    -extfile <(printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n') 2>/dev/null
  openssl ecparam -name prime256v1 -genkey -noout -out "$P/sa.key" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -keyout "$P/admin.key" -out "$P/admin.csr" -subj "/O=system:masters/CN=kubernetes-admin" 2>/dev/null
  openssl x509 -req -in "$P/admin.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -out "$P/admin.crt" -days 30 \
    -extfile <(printf 'extendedKeyUsage=clientAuth\n') 2>/dev/null
  kubectl config set-cluster local --server="$server" --certificate-authority="$P/ca.crt" --embed-certs --kubeconfig="$kubeconfig" >/dev/null
  kubectl config set-credentials admin --client-certificate="$P/admin.crt" --client-key="$P/admin.key" --embed-certs --kubeconfig="$kubeconfig" >/dev/null
  kubectl config set-context local --cluster=local --user=admin --kubeconfig="$kubeconfig" >/dev/null
  kubectl config use-context local --kubeconfig="$kubeconfig" >/dev/null
}

# reference_apiserver DIR ETCD_URL PORT [FLAG ...]: execs "$UP/kube-apiserver" serving on
# 127.0.0.1:PORT with the certificates reference_pki made in DIR, on ETCD_URL, with the given
# flags too (authorization, token file). It replaces the shell it runs in: run it in the
# background (`reference_apiserver ... >log 2>&1 &`), and $! is kube-apiserver's pid. No
# endpoint reconciler: the advertised address would be this host's, not loopback.
reference_apiserver() {
  local P=$1 etcd_url=$2 port=$3; shift 3
  exec "$UP/kube-apiserver" --etcd-servers="$etcd_url" --secure-port="$port" --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 --endpoint-reconciler-type=none --cert-dir="$P" \
    --tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$P/sa.key" --service-account-signing-key-file="$P/sa.key" \
    --service-cluster-ip-range=10.0.0.0/24 "$@"
}
