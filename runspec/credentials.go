package runspec

// CredentialKey is where a supplied credential (Spec.SuppliedCredentials) is kept: its
// key in the build's Secret, and its file's name in Paths.Creds. ref is the var as
// vars.Reference.String writes it (`source:path.field`). The key is the reference made
// label-safe (LabelValue's characters are a Secret key's too, and it never starts with a
// dot) and a hash of the whole reference, so that two references never share a key.
func CredentialKey(ref string) string {
	return LabelValue(ref) + "-" + ShortHash(ref)
}
