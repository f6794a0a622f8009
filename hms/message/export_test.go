package message

// FullReading returns d without the decoder's shortcuts (reading only a prefix
// of an embedded object, the table cache), for the tests that compare both
// ways on the fake metastore's workloads.
func FullReading(d Decoder) Decoder {
	d.fullReading = true
	return d
}
