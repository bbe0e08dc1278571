package audit

// DBPath is the SQLite file of s, or "".
func DBPath(s Store) string {
	if ss, ok := s.(*sqlStore); ok {
		return ss.path
	}
	return ""
}
