package postgres

import (
	"errors"

	"github.com/jackc/pgx/v5/pgconn"
)

// Deadlock implements sink.Driver: SQLSTATE 40P01 (deadlock_detected) or
// 40001 (serialization_failure). Two imports writing keys they share, in
// different orders and over several statements of one transaction, can
// wait on each other; PostgreSQL then fails one of them, whose
// transaction must roll back, releasing every row it wrote, for the other
// to go on.
func (Driver) Deadlock(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}
