// A file with comments and blank lines but no operations.

// Nothing else.
