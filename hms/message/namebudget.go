package message

import "fmt"

// What one event's descriptors may hold. A partition's name repeats every
// partition key, so a small message naming many partitions of a table with
// many long keys expands: a 7 KiB gzip ADD_PARTITION made 578 MiB of names. In
// Hive's own messages the names are shorter than the message (each partition
// object carries its location, which contains the name), so a bound relative to
// the message refuses only bombs.
const (
	// MaxDescriptorBytes is the absolute bound on the partition names of one
	// event (counting each name's string header too).
	MaxDescriptorBytes = 64 << 20
	// descriptorBytesPerMessageByte and descriptorBytesSlack make the bound
	// relative to the (inflated) message: 4 bytes of names per message byte,
	// plus 1 MiB.
	descriptorBytesPerMessageByte = 4
	descriptorBytesSlack          = 1 << 20
	stringHeaderBytes             = 16
)

// nameBudget counts the bytes of partition names one event decodes to.
type nameBudget struct {
	left, limit, message int
}

func newNameBudget(messageBytes int) nameBudget {
	limit := min(MaxDescriptorBytes, descriptorBytesPerMessageByte*messageBytes+descriptorBytesSlack)
	return nameBudget{left: limit, limit: limit, message: messageBytes}
}

// take counts one name.
func (b *nameBudget) take(name string) error { return b.takeBytes(len(name) + stringHeaderBytes) }

// takeBytes counts n bytes of what the event decodes to.
func (b *nameBudget) takeBytes(n int) error {
	b.left -= n
	if b.left < 0 {
		return fmt.Errorf("the partitions named decode to more than %d bytes for a %d-byte message (the bound is %d bytes per message byte plus %d, at most %d); refused as a decompression bomb",
			b.limit, b.message, descriptorBytesPerMessageByte, descriptorBytesSlack, MaxDescriptorBytes)
	}
	return nil
}
