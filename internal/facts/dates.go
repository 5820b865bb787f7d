package facts

import "strconv"

// MonthNumber returns the month number (as text, "1" to "12") of a
// lower-case month name or its abbreviation ("jan", "sep", "sept"), "" if
// it is none.
func MonthNumber(name string) string {
	if len(name) < 3 {
		return ""
	}
	for i, full := range Months {
		if name == full || name == full[:3] || (i == 8 && name == "sept") {
			return strconv.Itoa(i + 1)
		}
	}
	return ""
}
