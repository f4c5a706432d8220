/* An object that needs a variable nothing defines: loading it must fail
 * with the loader's reason ("undefined symbol: omptarget_no_such_variable").
 * (A data relocation is resolved at dlopen even with RTLD_LAZY.) */
extern int omptarget_no_such_variable;

int reads_missing(void) { return omptarget_no_such_variable; }
