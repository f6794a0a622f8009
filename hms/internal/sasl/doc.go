// Package sasl is the client side of Thrift's SASL transport
// (TSaslClientTransport), which Kerberized Hive Metastores require
// (hive.metastore.sasl.enabled=true), with the GSSAPI mechanism of RFC 4752 on
// top of gokrb5.
//
// The Thrift Go library has no SASL transport, so the framing is written here:
// the negotiation frames (a status byte and a 4-byte length, START / OK / BAD /
// ERROR / COMPLETE) and then the data frames (a 4-byte length, and, when the
// integrity layer was chosen, an RFC 4121 wrap token as payload). Kerberos itself
// (tickets, AP-REQ/AP-REP, checksums) is gokrb5's.
//
// Every length read from the server is checked against a bound before anything
// is allocated for it; a hostile or confused server gets a clear error, never a
// large allocation or a panic.
//
// What it does not do: the confidentiality layer (auth-conf, Hadoop's
// hadoop.rpc.protection=privacy), because gokrb5 cannot seal wrap tokens; a
// server that demands it is refused with an error that says so. Tokens of the
// pre-RFC 4121 format (DES and RC4 keys) are not understood either.
package sasl
