package apiclient

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// document is the OpenAPI document the client is generated from.
const document = "../../server/openapi.json"

// TestGenerated regenerates the client as go:generate does, into a
// temporary directory, and fails when client.gen.go differs: the document
// and the client it generates cannot drift apart.
func TestGenerated(t *testing.T) {
	out := filepath.Join(t.TempDir(), "client.gen.go")
	cmd := exec.CommandContext(t.Context(), "go", "tool", "oapi-codegen", "-config", "oapi-codegen.yaml", "-o", out, document)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go tool oapi-codegen: %v\n%s", err, msg)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, committed) {
		t.Errorf("client.gen.go is not what %s generates; run go generate in clients/go\n%s", document, firstDiff(string(committed), string(got)))
	}
}

// firstDiff shows the first line where have and want differ.
func firstDiff(have, want string) string {
	h, w := strings.Split(have, "\n"), strings.Split(want, "\n")
	for i := range max(len(h), len(w)) {
		var hl, wl string
		if i < len(h) {
			hl = h[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if hl != wl {
			return "line " + strconv.Itoa(i+1) + ":\ncommitted: " + hl + "\ngenerated: " + wl
		}
	}
	return "(the lines are equal)"
}

// TestDocumentValid checks the document with kin-openapi, the loader and
// validator oapi-codegen builds on: OpenAPI 3.1 structure, $refs that
// resolve, and examples and defaults valid against their schemas.
func TestDocumentValid(t *testing.T) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(document)
	if err != nil {
		t.Fatalf("load %s: %v", document, err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Errorf("%s is OpenAPI %s, want 3.1", document, doc.OpenAPI)
	}
	if err := doc.Validate(t.Context(), openapi3.EnableExamplesValidation(), openapi3.EnableSchemaDefaultsValidation(), openapi3.EnableSchemaPatternValidation(), openapi3.EnableMultiError()); err != nil {
		t.Errorf("kin-openapi finds %s invalid:\n%v", document, err)
	}
	if l := doc.Info.License; l == nil || l.Name != "MIT" {
		t.Errorf("info.license = %+v, want MIT", l)
	}
}
