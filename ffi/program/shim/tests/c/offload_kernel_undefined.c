// A host kernel object that calls a function nothing defines: loaded
// with every symbol bound at once, olCreateProgram refuses it (never a
// program whose first launch would end the process).
void missing_function(void);

void calls_missing(void) { missing_function(); }
