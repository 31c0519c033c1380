package match

// AppendSearchTextScan is appendSearchTextScan for the tests of package
// match_test, which may use benchdata (it imports an engine, which imports
// match).
var AppendSearchTextScan = appendSearchTextScan
