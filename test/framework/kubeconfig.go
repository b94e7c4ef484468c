package framework

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes to path a kubeconfig with one cluster (server URL,
// trusting caPEM), one user (the client certificate and key of kp, embedded)
// and one context "<user>@local" selected as current. The file is written with
// mode 0600.
func WriteKubeconfig(path, server string, caPEM []byte, user string, kp *KeyPair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: kp.CertPEM, ClientKeyData: kp.KeyPEM}
	ctx := user + "@local"
	cfg.Contexts[ctx] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user}
	cfg.CurrentContext = ctx
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}
