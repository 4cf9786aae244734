// Package outdir writes the objects of a conversion into a directory (`convert -o DIR`):
// the whole set appears at once or not at all, and the files an earlier conversion wrote
// there and this one does not are removed with it, never a file this tool did not write.
package outdir
