package etcdpartition

import (
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Latency is a TCP proxy that delays every byte by a one-way delay in each
// direction, as a long network path does: data keeps flowing at full rate, each
// chunk arrives that much later. (etcd's proxy delays each read before the next
// one, which also throttles a busy connection.) It is closed when the test ends;
// close the clients that use it first.
//
// SetSpikes holds a random fraction of the requests (chunks from the client to
// the server) longer still, as a retransmission on a lossy path does; the
// connection's later data waits behind a held chunk, as on a real TCP stream.
type Latency struct {
	ln    net.Listener
	to    string
	delay atomic.Int64 // one-way, nanoseconds

	spikeMu       sync.Mutex
	spikeFraction float64
	spikeExtra    time.Duration
	rnd           *rand.Rand
	requests      atomic.Int64 // request chunks passed
	spiked        atomic.Int64 // of those, held by a spike

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
	// Endpoint is the proxy's client URL.
	Endpoint string
}

// NewLatency starts a proxy to target (a URL such as http://127.0.0.1:2379 or
// thrift://127.0.0.1:9083) without delay.
func NewLatency(t testing.TB, target string) *Latency {
	t.Helper()
	host := hostOf(t, target)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	l := &Latency{ln: ln, to: host, Endpoint: "http://" + ln.Addr().String(),
		rnd: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 27))}
	l.wg.Add(1)
	go l.accept()
	t.Cleanup(l.close)
	return l
}

// SetRoundTrip adds rtt to every round trip through the proxy: half of it each
// way. 0 removes the delay (for data read from then on).
func (l *Latency) SetRoundTrip(rtt time.Duration) { l.delay.Store(int64(rtt / 2)) }

// SetSpikes holds each request (a chunk from client to server) with
// probability fraction for extra beyond the round trip's delay; 0 turns it off.
func (l *Latency) SetSpikes(fraction float64, extra time.Duration) {
	l.spikeMu.Lock()
	defer l.spikeMu.Unlock()
	l.spikeFraction, l.spikeExtra = fraction, extra
}

// Requests is how many request chunks (reads from the client side) passed the
// proxy, and how many of them a spike held.
func (l *Latency) Requests() (all, spiked int64) { return l.requests.Load(), l.spiked.Load() }

// spike is the extra hold of the next request chunk.
func (l *Latency) spike() time.Duration {
	l.requests.Add(1)
	l.spikeMu.Lock()
	defer l.spikeMu.Unlock()
	if l.spikeFraction > 0 && l.rnd.Float64() < l.spikeFraction {
		l.spiked.Add(1)
		return l.spikeExtra
	}
	return 0
}

func (l *Latency) accept() {
	defer l.wg.Done()
	for {
		in, err := l.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", l.to)
		if err != nil {
			in.Close()
			continue
		}
		l.mu.Lock()
		l.conns = append(l.conns, in, out)
		l.mu.Unlock()
		l.wg.Add(2)
		go l.pipe(out, in, true)
		go l.pipe(in, out, false)
	}
}

type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst, each chunk held until its due time (requests: also
// its spike, if any). Closing either side ends both.
func (l *Latency) pipe(dst, src net.Conn, requests bool) {
	defer l.wg.Done()
	ch := make(chan chunk, 1024)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer dst.Close()
		for c := range ch {
			if wait := time.Until(c.due); wait > 0 {
				time.Sleep(wait)
			}
			if _, err := dst.Write(c.data); err != nil {
				for range ch {
				}
				return
			}
		}
	})
	for {
		buf := make([]byte, 32*1024)
		n, err := src.Read(buf)
		if n > 0 {
			hold := time.Duration(l.delay.Load())
			if requests {
				hold += l.spike()
			}
			ch <- chunk{data: buf[:n], due: time.Now().Add(hold)}
		}
		if err != nil {
			break
		}
	}
	close(ch)
	wg.Wait()
	src.Close()
}

func (l *Latency) close() {
	l.ln.Close()
	l.mu.Lock()
	for _, c := range l.conns {
		c.Close()
	}
	l.mu.Unlock()
	l.wg.Wait()
}
