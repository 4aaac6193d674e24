package tabular

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/xuri/excelize/v2"
)

// MaxSheetRows is the most rows a sheet holds, the header and a continuation note included
// (Excel's limit; tests lower it). Longer tables continue on sheets name-2, name-3, ...
var MaxSheetRows = excelize.TotalRows

// DateFormat is the number format of date-time cells. Cells hold UTC times.
const DateFormat = "yyyy-mm-dd hh:mm:ss.000"

const (
	maxColWidth   = 60
	widthSample   = 1000 // rows looked at to size the columns
	maxSheetName  = excelize.MaxSheetNameLength
	maxCellLength = excelize.TotalCellChars
)

// Workbook is an XLSX workbook built one sheet at a time; every sheet is streamed, so a sheet
// of a million rows does not sit in memory.
type Workbook struct {
	f                     *excelize.File
	header, date, noteSty int
	taken                 map[string]bool // sheet names, lower case
	sheets                int
}

// NewWorkbook starts an empty workbook.
func NewWorkbook() (*Workbook, error) {
	f := excelize.NewFile()
	wb := &Workbook{f: f, taken: map[string]bool{}}
	var err error
	if wb.header, err = f.NewStyle(&excelize.Style{
		Font:      &excelize.Font{Bold: true, Color: "FFFFFF"},
		Fill:      excelize.Fill{Type: "pattern", Pattern: 1, Color: []string{"305496"}},
		Alignment: &excelize.Alignment{Vertical: "center"},
	}); err != nil {
		return nil, err
	}
	format := DateFormat
	if wb.date, err = f.NewStyle(&excelize.Style{CustomNumFmt: &format}); err != nil {
		return nil, err
	}
	if wb.noteSty, err = f.NewStyle(&excelize.Style{Font: &excelize.Font{Italic: true, Color: "595959"}}); err != nil {
		return nil, err
	}
	return wb, nil
}

// Sheet is what AddSheet writes: a table with a styled, frozen, filterable header row, and
// optionally rows after it (after a blank row; the first cell of each in bold when Heading).
type Sheet struct {
	Name  string
	Table *Table
	After [][]any
	// Reserved says Name was already taken for this sheet with Workbook.SheetName (so that
	// other sheets could refer to it before it was written).
	Reserved bool
}

// AddSheet writes s on a new sheet named after s.Name (made valid and unique: at most 31
// characters, no []:*?/\). A table longer than a sheet continues on further sheets named
// NAME-2, NAME-3, ...; the last row of each full sheet says where it continues. It returns the
// sheet names used.
func (wb *Workbook) AddSheet(s Sheet) ([]string, error) {
	sw := &sheetWriter{wb: wb, t: s.Table, base: s.Name, reserved: s.Reserved}
	sw.sizeHeader()
	if err := s.Table.Each(sw.row); err != nil {
		return nil, err
	}
	if err := sw.finish(s.After); err != nil {
		return nil, err
	}
	return sw.names, nil
}

// Write writes the workbook as XLSX to w.
func (wb *Workbook) Write(w io.Writer) error {
	if wb.sheets == 0 { // an empty workbook still needs a sheet
		if _, err := wb.AddSheet(Sheet{Name: "empty", Table: &Table{}}); err != nil {
			return err
		}
	}
	_, err := wb.f.WriteTo(w)
	return err
}

// Close releases the workbook's temporary files.
func (wb *Workbook) Close() error { return wb.f.Close() }

// SheetName makes name a valid sheet name not yet used in the workbook, and reserves it.
func (wb *Workbook) SheetName(name string) string {
	name = strings.Map(func(r rune) rune {
		if strings.ContainsRune(`[]:*?/\`, r) {
			return '_'
		}
		return r
	}, name)
	name = strings.Trim(name, "'")
	if name == "" {
		name = "sheet"
	}
	base := truncRunes(name, maxSheetName)
	name = base
	for i := 2; wb.taken[strings.ToLower(name)] || strings.EqualFold(name, "History"); i++ {
		suffix := fmt.Sprintf("-%d", i)
		name = truncRunes(base, maxSheetName-len(suffix)) + suffix
	}
	wb.taken[strings.ToLower(name)] = true
	return name
}

func truncRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// sheetWriter streams one table onto one or more sheets.
type sheetWriter struct {
	wb       *Workbook
	t        *Table
	base     string
	reserved bool
	names    []string
	sw       *excelize.StreamWriter
	row0     int     // rows written on the current sheet, header included
	sample   [][]any // the first rows, held until the column widths are known
	widths   []float64
	started  bool
}

// sizeHeader starts the column widths from the header names.
func (s *sheetWriter) sizeHeader() {
	s.widths = make([]float64, len(s.t.Columns))
	for i, c := range s.t.Columns {
		s.widths[i] = float64(utf8.RuneCountInString(c.Name) + 3) // room for the filter button
	}
}

// open starts a sheet: name, widths, frozen header row, header.
func (s *sheetWriter) open() error {
	var name string
	if len(s.names) == 0 {
		name = s.base
		if !s.reserved {
			name = s.wb.SheetName(s.base)
		}
	} else {
		name = s.wb.SheetName(s.continuation())
	}
	if s.wb.sheets == 0 {
		if err := s.wb.f.SetSheetName("Sheet1", name); err != nil {
			return err
		}
	} else if _, err := s.wb.f.NewSheet(name); err != nil {
		return err
	}
	s.wb.sheets++
	s.names = append(s.names, name)
	sw, err := s.wb.f.NewStreamWriter(name)
	if err != nil {
		return err
	}
	s.sw = sw
	for i, w := range s.widths {
		if err := sw.SetColWidth(i+1, i+1, min(w, maxColWidth)); err != nil {
			return err
		}
	}
	if err := sw.SetPanes(&excelize.Panes{Freeze: true, YSplit: 1, TopLeftCell: "A2", ActivePane: "bottomLeft"}); err != nil {
		return err
	}
	header := make([]any, len(s.t.Columns))
	for i, c := range s.t.Columns {
		header[i] = excelize.Cell{StyleID: s.wb.header, Value: c.Name}
	}
	s.row0 = 0
	return s.put(header)
}

func (s *sheetWriter) put(cells []any) error {
	s.row0++
	cell, err := excelize.CoordinatesToCellName(1, s.row0)
	if err != nil {
		return err
	}
	return s.sw.SetRow(cell, cells)
}

// row takes one table row: held while sizing the columns, then written.
func (s *sheetWriter) row(r []any) error {
	if !s.started {
		s.sample = append(s.sample, append([]any(nil), r...))
		for i, v := range r {
			if i < len(s.widths) {
				s.widths[i] = max(s.widths[i], cellWidth(v))
			}
		}
		if len(s.sample) < widthSample {
			return nil
		}
		return s.flushSample()
	}
	return s.write(r)
}

func (s *sheetWriter) flushSample() error {
	s.started = true
	if err := s.open(); err != nil {
		return err
	}
	for _, r := range s.sample {
		if err := s.write(r); err != nil {
			return err
		}
	}
	s.sample = nil
	return nil
}

func (s *sheetWriter) write(r []any) error {
	if s.row0 >= MaxSheetRows-1 { // keep the last row for the note
		next := s.wb.peekName(s.continuation())
		if err := s.put([]any{excelize.Cell{StyleID: s.wb.noteSty,
			Value: fmt.Sprintf("continued on sheet %s (a sheet holds at most %d rows)", next, MaxSheetRows)}}); err != nil {
			return err
		}
		if err := s.close(s.row0 - 1); err != nil {
			return err
		}
		if err := s.open(); err != nil {
			return err
		}
	}
	cells := make([]any, len(r))
	for i, v := range r {
		cells[i] = s.wb.cell(v)
	}
	return s.put(cells)
}

// continuation names the next sheet of a table that does not fit one: NAME-2, NAME-3, ...
func (s *sheetWriter) continuation() string {
	suffix := fmt.Sprintf("-%d", len(s.names)+1)
	return truncRunes(s.names[0], maxSheetName-len(suffix)) + suffix
}

// close flushes the current sheet and sets the autofilter over its header and lastRow.
func (s *sheetWriter) close(lastRow int) error {
	if err := s.sw.Flush(); err != nil {
		return err
	}
	if len(s.t.Columns) == 0 {
		return nil
	}
	end, err := excelize.CoordinatesToCellName(len(s.t.Columns), max(lastRow, 1))
	if err != nil {
		return err
	}
	return s.wb.f.AutoFilter(s.names[len(s.names)-1], "A1:"+end, nil)
}

func (s *sheetWriter) finish(after [][]any) error {
	if !s.started {
		if err := s.flushSample(); err != nil {
			return err
		}
	}
	last := s.row0
	if len(after) > 0 {
		s.row0++ // a blank row
		for _, r := range after {
			cells := make([]any, len(r))
			for i, v := range r {
				cells[i] = s.wb.cell(v)
			}
			if len(cells) > 0 {
				if h, ok := r[0].(Heading); ok {
					cells[0] = excelize.Cell{StyleID: s.wb.header, Value: string(h)}
				}
			}
			if err := s.put(cells); err != nil {
				return err
			}
		}
	}
	return s.close(last)
}

// Heading is a cell of Sheet.After styled as a header.
type Heading string

// Link is a cell that opens Target (a URL, or a file path relative to the workbook) when clicked;
// it shows Target.
type Link struct{ Target string }

// peekName returns what SheetName would return, without reserving it.
func (wb *Workbook) peekName(name string) string {
	got := wb.SheetName(name)
	delete(wb.taken, strings.ToLower(got))
	return got
}

// cell converts a value into what excelize writes: numbers, booleans and times (UTC, with the
// date format) typed; lists, maps and JSON as compact JSON text; text longer than a cell holds
// cut with a note in the cell itself.
func (wb *Workbook) cell(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case time.Time:
		return excelize.Cell{StyleID: wb.date, Value: x.UTC()}
	case bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return x
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Text(x)
		}
		return x
	case float32:
		return wb.cell(float64(x))
	case *big.Int:
		if x.IsInt64() {
			return x.Int64()
		}
		return x.String()
	case excelize.Cell:
		return x
	case Link:
		quoted := `"` + strings.ReplaceAll(x.Target, `"`, `""`) + `"`
		return excelize.Cell{Formula: "HYPERLINK(" + quoted + "," + quoted + ")", Value: x.Target}
	}
	s := Text(v)
	if utf8.RuneCountInString(s) > maxCellLength {
		n := utf8.RuneCountInString(s)
		note := fmt.Sprintf(" … [cut: %d characters in all, more than a cell holds; CSV and Parquet keep it whole]", n)
		s = string([]rune(s)[:maxCellLength-utf8.RuneCountInString(note)]) + note
	}
	return s
}

// cellWidth estimates the column width a value needs.
func cellWidth(v any) float64 {
	switch v.(type) {
	case time.Time:
		return float64(len(DateFormat) + 2)
	case nil:
		return 0
	case json.RawMessage, []any, map[string]any:
		return maxColWidth
	}
	return float64(utf8.RuneCountInString(Text(v)) + 2)
}
