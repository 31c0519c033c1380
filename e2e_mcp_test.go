package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mcpClientDir is the node project of the independent MCP client: the
// TypeScript SDK from npm (`npm ci` there installs it; .ci/run does).
const mcpClientDir = "server/testdata/mcp-client"

// TestMCPWithTypeScriptSDK drives a real `burner serve` with another
// implementation of MCP than burner's own (spec §11): the TypeScript SDK
// runs initialize, tools/list and every tool, the flow new address → SMTP
// delivery → wait → read → codes → delete, wait_for_code and wait_for_link
// on a full address, progress notifications of a wait, fenced text, a
// read-only key, a scoped key and no key (mcp.test.mjs).
func TestMCPWithTypeScriptSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = os.Stat(filepath.Join(mcpClientDir, "node_modules", "@modelcontextprotocol", "sdk", "package.json"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true needs node and the MCP client's node_modules (npm ci in %s): %v", mcpClientDir, err)
		}
		t.Skipf("no node, or no node_modules in %s (run npm ci there): %v", mcpClientDir, err)
	}

	data := filepath.Join(t.TempDir(), "burner.db")
	n := spawnNode(t, "mcp", data)
	n.waitReady(t)
	keys := map[string]string{"BURNER_KEY": n.firstKey()}
	for env, args := range map[string][]string{
		"BURNER_KEY_RO": {"--name", "agent-ro", "--read-only"},
		"BURNER_KEY_CI": {"--name", "agent-ci", "--inbox", "ci-*"},
	} {
		// The running server holds the file: keys create asks it over its
		// control socket.
		out, err := runCmd(t, append([]string{"keys", "create", "--data", data}, args...)...)
		if keys[env] = keyRE.FindString(out); err != nil || keys[env] == "" {
			t.Fatalf("burner keys create %v: %v\n%s", args, err, out)
		}
	}
	if keys["BURNER_KEY"] == "" {
		t.Fatalf("burner serve printed no first key:\n%s", n.output())
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "mcp.test.mjs")
	cmd.Dir = mcpClientDir
	cmd.Env = append(os.Environ(),
		"BURNER_URL="+n.http,
		"BURNER_SMTP="+n.smtp,
		"BURNER_DOMAIN=inbox.test", // spawnNode's --domain
	)
	for env, key := range keys {
		cmd.Env = append(cmd.Env, env+"="+key)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node --test mcp.test.mjs: %v\n%s", err, out)
	}
	t.Logf("node --test mcp.test.mjs:\n%s", out)
	// The runner's summary: every test ran, and none was skipped.
	if s := string(out); !strings.Contains(s, "# pass 9") || !strings.Contains(s, "# fail 0") {
		t.Errorf("node --test mcp.test.mjs did not pass 9 tests:\n%s", s)
	}
}
