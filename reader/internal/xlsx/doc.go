// Package xlsx reads the cells of an Excel workbook's sheets (Office Open
// XML, .xlsx): each cell's value as the workbook stores it, its type and
// its number format, and Excel's serial dates as times. It reads, it does
// not calculate or write, and it builds nothing when the command starts:
// the general workbook library it replaced built 1.3 MB of tables in its
// package initialisation, which every run of the command paid for.
package xlsx
