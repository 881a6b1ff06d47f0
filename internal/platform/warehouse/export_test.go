package warehouse

// SplitStatements exposes the statement splitter to the external tests.
var SplitStatements = splitStatements
