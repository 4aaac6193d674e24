// Package rules reads kubesift's detection rules: data, not code. A rule is rules/<id>.yaml
// (what it finds, why it matters, what to do, its parameters) plus queries/<id>.sql (the SQL
// that finds it, returning the contract columns). Users add or override rules with a directory
// holding the same pairs. Rule files are decoded strictly and every problem is reported at once.
// This package never touches the database.
package rules
