package server

import (
	_ "embed"
	"net/http"
)

// openAPI describes every route, parameter, response and error shape of
// the API (OpenAPI 3.1). Tests check real responses against it, and call
// every route through the Go client oapi-codegen generates from it
// (clients/go, a module of its own so that the generator stays out of
// burner's go.mod; rebuilt with go generate there).
//
//go:embed openapi.json
var openAPI []byte

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	writeBytes(w, "application/json", openAPI)
}
