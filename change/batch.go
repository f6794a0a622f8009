package change

// Batch is the unit an applier applies: the changes of the HMS events with ids in
// (From, To], in event order. When FullRefresh is set the FE must reload the whole
// catalog and Changes may be ignored; the cursor still moves to To.
type Batch struct {
	// Catalog is the FE's catalog name. It travels in the URL of the native
	// protocol, not in its body.
	Catalog     string       `json:"-"`
	From        int64        `json:"from_event_id"`
	To          int64        `json:"to_event_id"`
	FullRefresh bool         `json:"full_refresh"`
	Changes     []Descriptor `json:"changes"`
}
