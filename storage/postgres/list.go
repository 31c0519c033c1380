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
	lq, err := db.listQuery(ctx, q, m)
	if err != nil {
		return nil, err
	}
	return db.listPages(ctx, lq, q, m)
}

// listQuery is the SQL of one List without its paging: the SELECT of the
// emails of an inbox that the prefilter keeps, and its arguments.
type listQuery struct {
	sql  string
	args []any
	body bool // the body is read (not Query.NoBody)
	// text and headers are the columns the Matcher reads, when it does;
	// they come after the others.
	text, headers bool
}

// listQuery builds the SQL of q: the columns the answer and the Matcher
// m need, the inbox, the time and position bounds, and the prefilter.
func (db *DB) listQuery(ctx context.Context, q storage.Query, m *match.Matcher) (listQuery, error) {
	inbox := storage.InboxName(q.LocalPart)
	lq := listQuery{args: []any{inbox}, body: !q.NoBody, text: m.ReadsText(), headers: m.ReadsHeaders()}
	arg := func(v any) string {
		lq.args = append(lq.args, v)
		return "$" + strconv.Itoa(len(lq.args))
	}
	var sql strings.Builder
	sql.WriteString(`SELECT e.seq, e.id, e.to_addr, e.received_at, e.read, m.from_addr, m.from_name, m.subject`)
	if lq.body {
		sql.WriteString(`, (SELECT b.body FROM bodies b WHERE b.id = e.message)`)
	}
	if lq.text {
		sql.WriteString(`, m.search_text, m.search`)
	}
	if lq.headers {
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
			return listQuery{}, err
		}
		fmt.Fprintf(&sql, ` AND (e.received_at, e.seq) %s (%s, %s)`, c.op, arg(at), arg(seq))
	}
	prefilter(&sql, q, m, arg)
	lq.sql = sql.String()
	return lq, nil
}

// prefilter writes the tests that narrow the rows of q: it may keep an
// email the Matcher drops, never the reverse. Each filter is folded as
// the Matcher folds it, and position on bytea compares bytes: no
// wildcard, no collation. Only a header filter (name and value are tested
// apart), and a sender filter or a term holding a line break (which
// fsender's, the folded name and address on two lines, may fake), pass
// emails the Matcher then drops.
//
// The signature of each email (signature.go) comes first: a test on
// emails alone, which PostgreSQL makes before it looks up the email's
// message, so that most of the emails a subject or body filter or a
// search term rules out cost neither that lookup nor a strpos on their
// text. A term may be in the subject or sender instead: the signature
// has their trigrams too (and so a sender filter is tested there too). It holds for any bytes, valid UTF-8 or not.
func prefilter(sql *strings.Builder, q storage.Query, m *match.Matcher, arg func(any) string) {
	if sig := signatureTest(m, arg); sig != "" {
		sql.WriteString(` AND ` + sig)
	}
	if q.Subject != "" {
		fmt.Fprintf(sql, ` AND position(%s::bytea in m.fsubject) > 0`, arg([]byte(match.Fold(q.Subject))))
	}
	if q.From != "" {
		fmt.Fprintf(sql, ` AND position(%s::bytea in m.fsender) > 0`, arg([]byte(match.Fold(q.From))))
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
			fmt.Fprintf(sql, ` AND (%[1]s OR position(%[2]s::bytea in coalesce(m.fsubject, '')) > 0 OR position(%[2]s::bytea in m.fsender) > 0)`, has, arg([]byte(folded)))
		}
	}
	if q.Header != nil {
		// The name as encoded, with its length before it: a field of
		// that name, or by chance a value that holds the same bytes.
		name := record.AppendString(nil, strings.ToLower(q.Header.Name))
		fmt.Fprintf(sql, ` AND position(%s::bytea in m.headers) > 0 AND position(%s::bytea in m.headers) > 0`, arg(name), arg([]byte(match.Fold(q.Header.Value))))
	}
}

// listPages runs lq a page at a time, newest first, each page going on
// below the last row of the one before, and keeps the emails the Matcher
// m takes, until q.Limit of them or the end of the inbox.
func (db *DB) listPages(ctx context.Context, lq listQuery, q storage.Query, m *match.Matcher) ([]storage.Email, error) {
	page := listPage
	if q.Limit > 0 {
		page = q.Limit
	}
	if q.Header != nil {
		page = max(page, listPage) // the Matcher may drop many
	}
	var (
		out       []storage.Email
		lastAt    int64 // the last row read, where the next page starts
		lastSeq   int64
		continued bool
	)
	for {
		query, args := lq.sql, lq.args
		if continued {
			n := len(args)
			query += fmt.Sprintf(` AND (e.received_at, e.seq) < ($%d, $%d)`, n+1, n+2)
			args = append(args[:n:n], lastAt, lastSeq)
		}
		query += ` ORDER BY e.received_at DESC, e.seq DESC LIMIT ` + strconv.Itoa(page)
		rows, err := db.pool.Query(ctx, query, args...)
		if err != nil {
			return nil, err
		}
		n := 0
		for rows.Next() {
			n++
			r, err := scanListRow(rows, lq)
			if err != nil {
				rows.Close()
				return nil, err
			}
			lastAt, lastSeq = r.at, r.seq
			ok, err := r.matches(m, lq)
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("email %s: %w", r.id, err)
			}
			if !ok {
				continue
			}
			out = append(out, r.email(lq))
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
		continued = true
	}
}

// listRow is one row of a listQuery.
type listRow struct {
	seq, at                        int64
	id                             uuid.UUID
	read                           bool
	to, from, fromName, subj, body []byte
	// search and headers are the columns the Matcher reads, often most of
	// the bytes: read where pgx received them (bytea comes in binary, as
	// stored), valid until the next row, no copy.
	search, headers []byte
}

// scanListRow reads the row at hand of a listQuery.
func scanListRow(rows pgx.Rows, lq listQuery) (listRow, error) {
	var r listRow
	dest := []any{&r.seq, &r.id, &r.to, &r.at, &r.read, &r.from, &r.fromName, &r.subj}
	if lq.body {
		dest = append(dest, &r.body)
	}
	raw := len(dest)
	if lq.text {
		dest = append(dest, nil, nil)
	}
	if lq.headers {
		dest = append(dest, nil)
	}
	if err := rows.Scan(dest...); err != nil {
		return listRow{}, err
	}
	if lq.text {
		// Text in binary is its UTF-8 bytes: one of the two is NULL.
		if r.search = rows.RawValues()[raw]; r.search == nil {
			r.search = rows.RawValues()[raw+1]
		}
		raw += 2
	}
	if lq.headers {
		r.headers = rows.RawValues()[raw]
	}
	return r, nil
}

// matches reports whether the Matcher m takes r, or an error wrapping
// storage.ErrCorrupt for a damaged header section.
func (r *listRow) matches(m *match.Matcher, lq listQuery) (bool, error) {
	ok, needText := m.MatchFields(r.subj, r.fromName, r.from)
	if !ok || !needText {
		return ok, nil
	}
	if !m.MatchText(r.search) {
		return false, nil
	}
	if lq.headers {
		return m.MatchHeaders(r.headers)
	}
	return true, nil
}

// email returns the email of r.
func (r *listRow) email(lq listQuery) storage.Email {
	e := storage.Email{
		ID: r.id.String(), To: string(r.to), From: string(r.from), FromName: string(r.fromName),
		Subject: stringPtr(r.subj), ReceivedAt: record.FromMilli(r.at), Read: r.read,
	}
	if lq.body {
		e.Body = stringPtr(r.body)
	}
	return e
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
