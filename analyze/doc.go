// Package analyze runs rules over a kubesift database: it checks that a rule's input tables hold
// data, binds the rule's parameters and the analysis window as named parameters, runs the query
// sandboxed, checks the contract columns and collects the findings, their evidence kept in a
// temporary file and read back one finding at a time by the report writers, so that memory does
// not grow with the evidence. It also renders reports and gathers one object's timeline
// (RunTimeline, from queries/timeline).
package analyze
