#pragma once
// Just enough SQL scanning to keep a mutation inside its guarded transaction: which statement
// would end or restart it, and whether a statement text holds more than one statement. Not a
// parser: statements are recognised by their first keyword, after blanks and comments.
#include <string_view>

namespace fencelock::detail {

/// `sql` with leading whitespace, `-- ...` line comments and `/* ... */` comments removed.
std::string_view skip_blank_and_comments(std::string_view sql);

/// True for a statement that ends, restarts or hands off the transaction: BEGIN, START,
/// COMMIT, END, ABORT, ROLLBACK (but not ROLLBACK TO a savepoint), PREPARE TRANSACTION.
/// COMMIT AND CHAIN keeps PostgreSQL "in a transaction", so the state check alone misses it.
bool controls_transaction(std::string_view sql);

}  // namespace fencelock::detail
