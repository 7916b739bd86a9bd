package spawn

// Living returns the processes of the session's ledger at ledgerPath that
// still run (same pid, start time and boot as recorded). Unlike Reap it
// ends nothing: it tells whether something started for the session may
// still write where the session could.
func Living(ledgerPath string) ([]Record, error) {
	recs, err := readLedger(ledgerPath)
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, r := range recs {
		if Alive(r) {
			out = append(out, r)
		}
	}
	return out, nil
}
