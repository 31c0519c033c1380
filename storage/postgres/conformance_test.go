package postgres_test

import (
	"testing"

	"burner/storage"
	"burner/storage/postgres"
	"burner/storage/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, cfg storetest.Config) storage.Engine {
		return openDB(t, testDatabase(t), postgres.Options{
			Now: cfg.Now, Retention: cfg.Retention, Hooks: cfg.Hooks,
		})
	})
}
