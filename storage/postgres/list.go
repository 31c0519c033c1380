package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"burner/storage"
	"burner/storage/internal/match"
	"burner/storage/internal/record"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// List returns the emails of q.LocalPart that match q, newest first
// (receivedAt descending, then reverse arrival order), as storage.Engine's
// List. SQL narrows the rows with strpos-like tests on the text folded by
// storage's code (position on bytea, never ILIKE or a collation); the
// match.Matcher decides. With q.AfterID or q.BeforeID it returns
// ErrNotFound when that email does not exist or is in another inbox.
func (db *DB) List(ctx context.Context, q storage.Query) ([]storage.Email, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := db.list(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", q.LocalPart, db.fail(err))
	}
	return out, nil
}

// listPage is how many rows a filtered List without a limit asks for at
// a time; a page with a limit asks for the limit.
const listPage = 1000

func (db *DB) list(ctx context.Context, q storage.Query) ([]storage.Email, error) {
	m := match.New(q)
	inbox := storage.InboxName(q.LocalPart)
	var (
		sql  strings.Builder
		args = []any{inbox}
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	sql.WriteString(`SELECT e.seq, e.id, e.to_addr, e.received_at, e.read, m.from_addr, m.from_name, m.subject`)
	if !q.NoBody {
		sql.WriteString(`, (SELECT b.body FROM bodies b WHERE b.id = e.message)`)
	}
	if m.ReadsText() {
		sql.WriteString(`, m.search_text, m.search`)
	}
	if m.ReadsHeaders() {
		sql.WriteString(`, m.headers`)
	}
	sql.WriteString(` FROM emails e JOIN messages m ON m.id = e.message WHERE e.inbox = $1`)
	if !q.Since.IsZero() {
		// Strictly after Since: receivedAt holds whole milliseconds.
		fmt.Fprintf(&sql, ` AND e.received_at > %s`, arg(record.FloorMilli(q.Since)))
	}
	if !q.Before.IsZero() {
		fmt.Fprintf(&sql, ` AND e.received_at < %s`, arg(record.CeilMilli(q.Before)))
	}
	for _, c := range []struct {
		id string
		op string
	}{{q.AfterID, ">"}, {q.BeforeID, "<"}} {
		if c.id == "" {
			continue
		}
		at, seq, err := db.position(ctx, inbox, c.id)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&sql, ` AND (e.received_at, e.seq) %s (%s, %s)`, c.op, arg(at), arg(seq))
	}
	// The prefilter: it may keep an email the Matcher drops, never the
	// reverse. Each filter is folded as the Matcher folds it, and position
	// on bytea compares bytes: no wildcard, no collation. Only a header
	// filter (name and value are tested apart) and a term holding a line
	// break (which fsender's may fake) pass emails the Matcher then drops.
	//
	// The signature of each email (signature.go) comes first: a test on
	// emails alone, which PostgreSQL makes before it looks up the email's
	// message, so that most of the emails a subject or body filter or a
	// search term rules out cost neither that lookup nor a strpos on their
	// text. A term may be in the subject or sender instead: the signature
	// has their trigrams too. It holds for any bytes, valid UTF-8 or not.
	if sig := signatureTest(m, arg); sig != "" {
		sql.WriteString(` AND ` + sig)
	}
	if q.Subject != "" {
		fmt.Fprintf(&sql, ` AND position(%s::bytea in m.fsubject) > 0`, arg([]byte(match.Fold(q.Subject))))
	}
	if q.Body != "" {
		folded := match.Fold(q.Body)
		if has, ok := searchHas(folded, arg); ok {
			sql.WriteString(` AND ` + has)
		}
	}
	for _, t := range q.Terms {
		if t == "" {
			continue
		}
		folded := match.Fold(t)
		if has, ok := searchHas(folded, arg); ok {
			fmt.Fprintf(&sql, ` AND (%[1]s OR position(%[2]s::bytea in coalesce(m.fsubject, '')) > 0 OR position(%[2]s::bytea in m.fsender) > 0)`, has, arg([]byte(folded)))
		}
	}
	if q.Header != nil {
		// The name as encoded, with its length before it: a field of
		// that name, or by chance a value that holds the same bytes.
		name := record.AppendString(nil, strings.ToLower(q.Header.Name))
		fmt.Fprintf(&sql, ` AND position(%s::bytea in m.headers) > 0 AND position(%s::bytea in m.headers) > 0`, arg(name), arg([]byte(match.Fold(q.Header.Value))))
	}
	base := sql.String()
	extra := 0 // columns read raw
	if m.ReadsText() {
		extra += 2
	}
	if m.ReadsHeaders() {
		extra++
	}

	page := listPage
	if q.Limit > 0 {
		page = q.Limit
	}
	if q.Header != nil {
		page = max(page, listPage) // the Matcher may drop many
	}
	var (
		out        []storage.Email
		lastAt     int64
		lastSeq    int64
		continuing bool
	)
	for {
		query, qargs := base, args
		if continuing {
			n := len(args)
			query += fmt.Sprintf(` AND (e.received_at, e.seq) < ($%d, $%d)`, n+1, n+2)
			qargs = append(args[:n:n], lastAt, lastSeq)
		}
		query += ` ORDER BY e.received_at DESC, e.seq DESC LIMIT ` + strconv.Itoa(page)
		rows, err := db.pool.Query(ctx, query, qargs...)
		if err != nil {
			return nil, err
		}
		n := 0
		for rows.Next() {
			n++
			var (
				e                              storage.Email
				id                             uuid.UUID
				to, from, fromName, subj, body []byte
				search, headers                []byte
				at                             int64
			)
			dest := []any{&lastSeq, &id, &to, &at, &e.Read, &from, &fromName, &subj}
			if !q.NoBody {
				dest = append(dest, &body)
			}
			// The search text and headers, often most of the bytes, are
			// read where pgx received them (bytea comes in binary, as
			// stored), valid until the next row: no copy.
			raw := len(dest)
			for range extra {
				dest = append(dest, nil)
			}
			if err := rows.Scan(dest...); err != nil {
				rows.Close()
				return nil, err
			}
			if m.ReadsText() {
				// Text in binary is its UTF-8 bytes: one of the two is NULL.
				if search = rows.RawValues()[raw]; search == nil {
					search = rows.RawValues()[raw+1]
				}
				raw += 2
			}
			if m.ReadsHeaders() {
				headers = rows.RawValues()[raw]
			}
			lastAt = at
			ok, needText := m.MatchFields(subj, fromName, from)
			if ok && needText {
				ok = m.MatchText(search)
				if ok && m.ReadsHeaders() {
					if ok, err = m.MatchHeaders(headers); err != nil {
						rows.Close()
						return nil, fmt.Errorf("email %s: %w", id, err)
					}
				}
			}
			if !ok {
				continue
			}
			e.ID, e.To, e.From, e.FromName = id.String(), string(to), string(from), string(fromName)
			e.Subject, e.ReceivedAt = stringPtr(subj), record.FromMilli(at)
			if !q.NoBody {
				e.Body = stringPtr(body)
			}
			out = append(out, e)
			if q.Limit > 0 && len(out) == q.Limit {
				break
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if n < page || q.Limit > 0 && len(out) >= q.Limit {
			return out, nil
		}
		continuing = true
	}
}

// searchHas returns the SQL test of whether the search text of m holds
// folded, with arg adding its parameters; ok is false when SQL cannot
// tell (a term that is not valid UTF-8 may lie within a character of a
// text), and the Matcher alone decides.
func searchHas(folded string, arg func(any) string) (sql string, ok bool) {
	if !utf8.ValidString(folded) || strings.IndexByte(folded, 0) >= 0 {
		return "", false
	}
	// A search_text holds no invalid UTF-8 and no NUL: strpos on it is
	// the byte comparison position on search makes.
	return fmt.Sprintf(`coalesce(strpos(m.search_text, %s) > 0, position(%s::bytea in m.search) > 0)`, arg(folded), arg([]byte(folded))), true
}

// position returns the receivedAt and arrival seq of email id, which must
// be in inbox; ErrNotFound when there is none.
func (db *DB) position(ctx context.Context, inbox, id string) (at, seq int64, err error) {
	uid, err := storage.ParseID(id)
	if err != nil {
		return 0, 0, err
	}
	err = db.pool.QueryRow(ctx, `SELECT received_at, seq FROM emails WHERE id = $1 AND inbox = $2`, uid, inbox).Scan(&at, &seq)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, 0, storage.ErrNotFound
	}
	return at, seq, err
}
