# PKI and kubeconfigs of the e2e cluster, made with openssl. Sourced by cluster.sh.
# EC keys: quick to make, and every component accepts them.

pki_key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1" 2>/dev/null; }

# pki_cert NAME SUBJECT EXTENSIONS: a key and a certificate signed by the cluster CA.
pki_cert() {
	local dir=$E2E_STATE/pki
	pki_key "$dir/$1.key"
	openssl req -new -key "$dir/$1.key" -subj "$2" -out "$dir/$1.csr" 2>/dev/null
	printf '%b\n' "$3" >"$dir/$1.ext"
	openssl x509 -req -in "$dir/$1.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
		-days 30 -extfile "$dir/$1.ext" -out "$dir/$1.crt" 2>/dev/null || die "signing $1"
	rm -f "$dir/$1.csr" "$dir/$1.ext"
}

# kubeconfig NAME USER: a kubeconfig for the apiserver on loopback, with USER's cert.
kubeconfig() {
	local dir=$E2E_STATE/pki
	cat >"$dir/$1.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: $(base64 -w0 <"$dir/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 <"$dir/$2.crt")
    client-key-data: $(base64 -w0 <"$dir/$2.key")
contexts:
- name: e2e
  context: {cluster: e2e, user: $2}
current-context: e2e
YAML
	chmod 600 "$dir/$1.kubeconfig"
}

make_pki() {
	local dir=$E2E_STATE/pki
	mkdir -p "$dir" && chmod 700 "$dir"
	pki_key "$dir/ca.key"
	openssl req -x509 -new -key "$dir/ca.key" -subj "/CN=concourse-tekton-e2e-ca" -days 30 \
		-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
		-out "$dir/ca.crt" 2>/dev/null || die "making the CA"
	local client='basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth'
	pki_cert apiserver "/CN=kube-apiserver" "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,IP:10.96.0.1,IP:$NODE_IP,IP:$POD_BRIDGE_IP,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	pki_cert admin "/O=system:masters/CN=e2e-admin" "$client"
	pki_cert kcm "/CN=system:kube-controller-manager" "$client"
	pki_cert scheduler "/CN=system:kube-scheduler" "$client"
	pki_cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "$client"
	pki_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
	pki_key "$dir/sa.key"
	openssl ec -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
	kubeconfig admin admin
	kubeconfig kcm kcm
	kubeconfig scheduler scheduler
	kubeconfig kubelet kubelet
}
