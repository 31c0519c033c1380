package server

import (
	_ "embed"
	"net/http"
)

// openAPI describes every route, parameter, response and error shape of
// the API (OpenAPI 3.1). A test checks real responses against it.
//
//go:embed openapi.json
var openAPI []byte

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	writeBytes(w, "application/json", openAPI)
}
