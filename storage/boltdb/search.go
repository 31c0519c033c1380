package boltdb

import (
	"fmt"
	"sync"

	"burner/storage"
	"burner/storage/internal/match"
)

// parallel lists the walk's emails with workers goroutines that evaluate
// batches of candidates, while this one walks: the cursors stay in one
// goroutine, and what the workers read (the records the walk found) stays
// valid until the transaction ends, after they are done.
func (w *walk) parallel(q storage.Query, workers int) ([]storage.Email, error) {
	type batch struct {
		cands  []candidate
		emails []storage.Email
		err    error
		done   chan struct{}
	}
	jobs := make(chan *batch)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev := newEvaluator(match.New(q))
			ev.noBody = q.NoBody
			defer ev.release()
			for b := range jobs {
				func() {
					defer close(b.done)
					defer func() {
						// No handler recovers a panic of this goroutine, and it
						// would end the process: make it this List's error.
						if p := recover(); p != nil {
							b.err = fmt.Errorf("panic matching emails: %v", p)
						}
					}()
					for _, c := range b.cands {
						e, in, err := ev.eval(c)
						if err != nil {
							b.err = err
							return
						}
						if in {
							b.emails = append(b.emails, e)
						}
					}
				}()
			}
		}()
	}
	defer wg.Wait()
	defer close(jobs)

	var (
		out     []storage.Email
		pending []*batch
		size    = 16 // batches grow, so that a list that fills early does little extra
	)
	full := func() bool { return q.Limit > 0 && len(out) >= q.Limit }
	collect := func() error { // the oldest batch, in order
		b := pending[0]
		pending = pending[1:]
		<-b.done
		for _, e := range b.emails {
			if !full() {
				out = append(out, e)
			}
		}
		return b.err
	}
	for !full() {
		b := &batch{done: make(chan struct{})}
		for len(b.cands) < size {
			c, ok, err := w.next()
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			b.cands = append(b.cands, c)
		}
		if len(b.cands) == 0 {
			break
		}
		size = min(2*size, 512)
		jobs <- b
		pending = append(pending, b)
		if len(pending) > 2*workers {
			if err := collect(); err != nil {
				return nil, err
			}
		}
	}
	for len(pending) > 0 {
		if err := collect(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// evaluator decodes and matches candidates, in one goroutine at a time.
type evaluator struct {
	m      *match.Matcher
	buf    *[]byte // what content records are decoded into
	noBody bool    // Query.NoBody: the body is neither decoded nor returned
}

// decodeBuffers holds the buffers evaluators decode into.
var decodeBuffers = sync.Pool{New: func() any { return new([]byte) }}

func newEvaluator(m *match.Matcher) *evaluator {
	return &evaluator{m: m, buf: decodeBuffers.Get().(*[]byte)}
}

func (ev *evaluator) release() {
	if cap(*ev.buf) <= 64<<10 { // a huge message's buffer is not worth keeping
		decodeBuffers.Put(ev.buf)
	}
}

// eval returns the email of c, and whether it matches. A body filter or a
// search decodes the text alone until it matches; the body is decoded
// once the email is in, for it is part of the answer, unless the query
// asks for no body (Query.NoBody).
func (ev *evaluator) eval(c candidate) (storage.Email, bool, error) {
	v, err := viewEmail(c.rec)
	if err != nil {
		return storage.Email{}, false, err
	}
	ok, needContent := ev.m.MatchFields(v.subject, v.fromName, v.from) // again: it folds the fields the terms look at
	if !ok {
		return storage.Email{}, false, nil
	}
	if ev.noBody && !needContent {
		// The record decided, and no body is wanted: the content, often
		// most of an email's bytes, is not decoded at all.
		return v.email(c.key), true, nil
	}
	ct, buf, err := decodeText(c.content, *ev.buf)
	*ev.buf = buf
	if err == nil && ev.m.ReadsHeaders() {
		*ev.buf, err = ct.decodeSection(*ev.buf)
	}
	if err != nil {
		return storage.Email{}, false, fmt.Errorf("email %x: %w", v.id, err)
	}
	if needContent && !ev.m.MatchText(ct.text) {
		return storage.Email{}, false, nil
	}
	if needContent && ev.m.ReadsHeaders() {
		if ok, err := ev.m.MatchHeaders(ct.headers); err != nil || !ok {
			return storage.Email{}, false, err
		}
	}
	if ev.noBody {
		return v.email(c.key), true, nil
	}
	if *ev.buf, err = ct.decodeSection(*ev.buf); err != nil {
		return storage.Email{}, false, fmt.Errorf("email %x: %w", v.id, err)
	}
	e := v.email(c.key)
	e.Body = bodyString(ct.body)
	return e, true, nil
}
