#include "warehouse/statement_splitter.h"

#include <gtest/gtest.h>

namespace sluice::warehouse {
namespace {

using V = std::vector<std::string>;

TEST(StatementSplitter, SplitsOnSemicolonsAndTrims) {
  EXPECT_EQ(SplitStatements("select 1;  select 2 ;\nselect 3"),
            (V{"select 1", "select 2", "select 3"}));
}

TEST(StatementSplitter, EmptyStatementsAreDropped) {
  EXPECT_EQ(SplitStatements(";;  ;\n select 1;;; ;"), (V{"select 1"}));
  EXPECT_TRUE(SplitStatements("").empty());
  EXPECT_TRUE(SplitStatements("  \n\t ").empty());
}

TEST(StatementSplitter, CommentOnlyStatementsAreDropped) {
  EXPECT_TRUE(SplitStatements("-- nothing here; really\n/* nor ; here */ ;").empty());
  EXPECT_EQ(SplitStatements("select 1; -- trailing note\n"), (V{"select 1"}));
}

TEST(StatementSplitter, SemicolonInsideSingleQuotesStays) {
  EXPECT_EQ(SplitStatements("select 'a;b'; select 'it''s; fine'"),
            (V{"select 'a;b'", "select 'it''s; fine'"}));
}

TEST(StatementSplitter, SemicolonInsideDoubleQuotedIdentifierStays) {
  EXPECT_EQ(SplitStatements("select 1 as \"x;y\"; select \"a\"\"b;\""),
            (V{"select 1 as \"x;y\"", "select \"a\"\"b;\""}));
}

TEST(StatementSplitter, DollarQuotedBodiesStayWhole) {
  std::string fn =
      "create function f() returns int as $$ begin perform 1; return 2; end $$ language plpgsql";
  EXPECT_EQ(SplitStatements(fn + "; select f()"), (V{fn, "select f()"}));
}

TEST(StatementSplitter, TaggedDollarQuotesNestOtherTags) {
  std::string body = "do $outer$ begin execute $inner$ select 1; $inner$; end $outer$";
  EXPECT_EQ(SplitStatements(body + ";select 2;"), (V{body, "select 2"}));
}

TEST(StatementSplitter, PositionalParametersAreNotDollarQuotes) {
  EXPECT_EQ(SplitStatements("prepare p as select $1; execute p(1)"),
            (V{"prepare p as select $1", "execute p(1)"}));
}

TEST(StatementSplitter, DollarInsideIdentifierIsNotAQuote) {
  EXPECT_EQ(SplitStatements("select a$b$ from t; select 2"), (V{"select a$b$ from t", "select 2"}));
}

TEST(StatementSplitter, LineCommentsHideSemicolonsUntilEndOfLine) {
  EXPECT_EQ(SplitStatements("select 1 -- not the end; really\n+ 1; select 2"),
            (V{"select 1 -- not the end; really\n+ 1", "select 2"}));
}

TEST(StatementSplitter, BlockCommentsHideSemicolonsAndNest) {
  EXPECT_EQ(SplitStatements("select /* a; /* b; */ c; */ 1; select 2"),
            (V{"select /* a; /* b; */ c; */ 1", "select 2"}));
}

TEST(StatementSplitter, QuotesInsideCommentsDoNotOpenStrings) {
  EXPECT_EQ(SplitStatements("-- don't\nselect 1; /* it's */ select 2"),
            (V{"-- don't\nselect 1", "/* it's */ select 2"}));
}

TEST(StatementSplitter, CommentMarkersInsideStringsAreText) {
  EXPECT_EQ(SplitStatements("select '--;'; select '/*;'"), (V{"select '--;'", "select '/*;'"}));
}

TEST(StatementSplitter, EscapeStringsTakeBackslashes) {
  EXPECT_EQ(SplitStatements("select E'a\\';b'; select 2"), (V{"select E'a\\';b'", "select 2"}));
  // Without the E prefix PostgreSQL reads the backslash literally.
  EXPECT_EQ(SplitStatements("select 'a\\'; select 2"), (V{"select 'a\\'", "select 2"}));
}

TEST(StatementSplitter, BackslashEscapesForDatabricks) {
  EXPECT_EQ(SplitStatements("select 'it\\'s; ok'; select `a;b` from t", {true}),
            (V{"select 'it\\'s; ok'", "select `a;b` from t"}));
}

TEST(StatementSplitter, UnterminatedQuoteRunsToTheEnd) {
  EXPECT_EQ(SplitStatements("select 1; select 'oops; select 3"),
            (V{"select 1", "select 'oops; select 3"}));
}

}  // namespace
}  // namespace sluice::warehouse
