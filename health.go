package main

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func newHealthCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Check a running burner: GET /healthz, exit 0 on 200, else 1",
		Long: `Ask the burner serving on http.listen whether it would store new mail
right now. It reads the configuration serve reads (the config file,
BURNER_HTTP_LISTEN and the other BURNER_ variables, --http) to find the
API, then GETs /healthz on this machine, exiting 0 when it answers
200 and 1 otherwise (503, no answer, no server). The container image uses
it as its HEALTHCHECK; a monitoring script may too. With http.tls_cert set
it speaks HTTPS, without checking the certificate's name: it only asks the
server on this machine's loopback whether it is healthy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(cmd)
			if err != nil {
				return err
			}
			timeout, _ := cmd.Flags().GetDuration("timeout")
			return checkHealth(cmd, cfg.HTTP, timeout)
		},
	}
	cmd.Flags().String("http", defaultConfig().HTTP.Listen, "the host:port `ADDR` burner's HTTP API listens on; overrides http.listen")
	cmd.Flags().Duration("timeout", 5*time.Second, "give up after this `DURATION`")
	return cmd
}

// checkHealth GETs /healthz of the server listening on cfg.Listen and
// prints its answer; it returns an error unless the answer is 200.
func checkHealth(cmd *cobra.Command, cfg HTTPConfig, timeout time.Duration) error {
	url := healthURL(cfg.Listen, cfg.TLSCert != "")
	client := &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy: nil, // a proxy from the environment must not answer for burner
			// The certificate names the public host, not the loopback
			// address asked here; what matters is burner's answer.
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above
		},
	}
	resp, err := client.Get(url)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %s %s\n", url, resp.Status, strings.TrimSpace(string(body)))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("health: %s answered %s", url, resp.Status)
	}
	return nil
}

// healthURL returns the /healthz URL of a server listening on listen: a
// wildcard address (":8080", "0.0.0.0:8080", "[::]:8080") is asked on
// loopback.
func healthURL(listen string, https bool) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		host, port = listen, "80"
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	scheme := "http"
	if https {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/healthz"
}
