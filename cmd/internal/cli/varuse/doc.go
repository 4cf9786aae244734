// Package varuse follows the static vars of a command line (-v, -y, -l) into what a
// conversion writes: which vars were interpolated, which of them look like credentials,
// and which objects hold their values as plain text. It reads no files.
package varuse
