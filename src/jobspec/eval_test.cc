#include "jobspec/eval.h"

#include <filesystem>
#include <fstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "jobspec/parser.h"

namespace drover::jobspec {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

absl::StatusOr<Json> Eval(const std::string& expr, EvalOptions options = {},
                          Json variables = Json::object()) {
  absl::StatusOr<ExprPtr> e = ParseExpression("e.hcl", expr);
  if (!e.ok()) {
    return e.status();
  }
  Evaluator ev("e.hcl", options);
  ev.SetVariables(std::move(variables));
  return ev.Evaluate(**e);
}

Json Ok(const std::string& expr, Json variables = Json::object()) {
  absl::StatusOr<Json> v = Eval(expr, {}, std::move(variables));
  EXPECT_TRUE(v.ok()) << expr << ": " << v.status();
  return v.ok() ? *v : Json();
}

std::string Err(const std::string& expr, EvalOptions options = {}) {
  absl::StatusOr<Json> v = Eval(expr, options);
  EXPECT_FALSE(v.ok()) << expr << " gave " << (v.ok() ? v->dump() : "");
  return v.ok() ? "" : std::string(v.status().message());
}

TEST(EvalTest, RuntimeReferencesStayVerbatim) {
  EXPECT_EQ(Ok(R"("${NOMAD_ALLOC_ID}")"), "${NOMAD_ALLOC_ID}");
  EXPECT_EQ(Ok(R"("${attr.kernel.name}")"), "${attr.kernel.name}");
  EXPECT_EQ(Ok(R"("${node.unique.name}-${meta.rack}")"), "${node.unique.name}-${meta.rack}");
  EXPECT_EQ(Ok(R"("${env["HOME"]}/x")"), R"(${env["HOME"]}/x)");
  EXPECT_EQ(Ok(R"("${device.attr.memory}")"), "${device.attr.memory}");
  // Rendered canonically, so the client's lookup finds them whatever the spacing.
  EXPECT_EQ(Ok(R"("${ NOMAD_PORT_http }")"), "${NOMAD_PORT_http}");
  EXPECT_EQ(Ok(R"("${attr.kernel.name }")"), "${attr.kernel.name}");
  // Mixed with variables: the variable part is resolved, the runtime part kept.
  EXPECT_EQ(Ok(R"("${var.app}-${NOMAD_ALLOC_INDEX}")", Json{{"app", "web"}}),
            "web-${NOMAD_ALLOC_INDEX}");
}

TEST(EvalTest, UnknownNamesInTemplatesAreTheClients) {
  // Task environment variables and any name the file does not define stay verbatim.
  EXPECT_EQ(Ok(R"("${HOME}/bin:${PATH}")"), "${HOME}/bin:${PATH}");
  EXPECT_EQ(Ok(R"("${upper("a")}-${A}")"), "A-${A}");
  // But for-expression variables are the file's own.
  EXPECT_EQ(Ok(R"([for A in ["x"] : "${A}"])"), Json::parse(R"(["x"])"));
}

TEST(EvalTest, BareRuntimeReferencesBecomeInterpolations) {
  EXPECT_EQ(Ok("attr.kernel.name"), "${attr.kernel.name}");
  EXPECT_EQ(Ok(R"(env["HOME"])"), R"(${env["HOME"]})");
  EXPECT_EQ(Ok("NOMAD_ALLOC_ID"), "${NOMAD_ALLOC_ID}");
  EXPECT_EQ(Ok("meta.tags[0]"), "${meta.tags[0]}");
  EXPECT_THAT(Err("meta[var.k]"), HasSubstr("Invalid runtime reference"));
}

TEST(EvalTest, VariablesAndUnknownNames) {
  EXPECT_EQ(Ok("var.n * 2", Json{{"n", 21}}), 42);
  EXPECT_EQ(Ok("var.m.k", Json{{"m", {{"k", "v"}}}}), "v");
  EXPECT_EQ(Err("var.nope"),
            "e.hcl:1,1-9: Reference to undeclared input variable; An input variable with the "
            "name \"nope\" has not been declared.");
  EXPECT_EQ(Err("foo + 1"), "e.hcl:1,1-4: Unknown variable; There is no variable named \"foo\".");
  EXPECT_THAT(Err("local.x"), HasSubstr("Reference to undeclared local value"));
}

TEST(EvalTest, LocalsAreLazyAndCyclesAreReported) {
  absl::StatusOr<File> f = ParseFile("l.hcl", "a = local.b + 1\nb = 2\nc = local.d\nd = local.c\n");
  ASSERT_TRUE(f.ok());
  Evaluator ev("l.hcl", {});
  for (const Attribute& attr : f->body.attributes) {
    ASSERT_TRUE(ev.AddLocal(attr).ok());
  }
  absl::StatusOr<ExprPtr> a = ParseExpression("e.hcl", "local.a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*ev.Evaluate(**a), 3);
  absl::StatusOr<ExprPtr> c = ParseExpression("e.hcl", "local.c");
  ASSERT_TRUE(c.ok());
  absl::StatusOr<Json> cycle = ev.Evaluate(**c);
  ASSERT_FALSE(cycle.ok());
  EXPECT_THAT(cycle.status().message(), HasSubstr("Cycle in local values"));
  EXPECT_FALSE(ev.AddLocal(f->body.attributes[0]).ok());  // duplicate name
}

TEST(EvalTest, TypeMismatches) {
  EXPECT_EQ(Err("1 + true"),
            "e.hcl:1,5-9: Invalid operand; Unsuitable value for right operand: number required, "
            "got bool.");
  EXPECT_THAT(Err("\"a\" && true"), HasSubstr("bool required, got string"));
  EXPECT_THAT(Err("1 ? 2 : 3"), HasSubstr("Incorrect condition type"));
  EXPECT_THAT(Err("\"x${[1]}\""), HasSubstr("Invalid template interpolation value"));
  EXPECT_THAT(Err("\"x${null}\""), HasSubstr("The expression result is null"));
  EXPECT_THAT(Err("[1][5]"), HasSubstr("index 5 is out of range"));
  EXPECT_THAT(Err("{a = 1}.b"), HasSubstr("does not have an attribute named \"b\""));
  EXPECT_THAT(Err("1 / 0"), HasSubstr("can't divide by zero"));
  EXPECT_THAT(Err("[for x in 5 : x]"), HasSubstr("Iteration over non-iterable value"));
  EXPECT_THAT(Err("{for x in [1, 1] : x => x}"), HasSubstr("Duplicate object key"));
  EXPECT_THAT(Err("9223372036854775807 * 10 * 1e308 * 10"), HasSubstr("not a finite number"));
}

TEST(EvalTest, IntegerOverflowBecomesFloat) {
  EXPECT_EQ(Ok("9223372036854775807 + 1"), 9223372036854775808.0);
}

TEST(FunctionsTest, Strings) {
  EXPECT_EQ(Ok(R"(upper("abc"))"), "ABC");
  EXPECT_EQ(Ok(R"(lower("ABC"))"), "abc");
  EXPECT_EQ(Ok(R"(title("hello world"))"), "Hello World");
  EXPECT_EQ(Ok(R"(format("%s-%03d-%.2f-%t-%v-%q-%%", "a", 7, 3.14159, true, 5, "q"))"),
            R"(a-007-3.14-true-5-"q"-%)");
  EXPECT_EQ(Ok(R"(format("%-4s|%4s|%x", "a", "b", 255))"), "a   |   b|ff");
  EXPECT_EQ(Ok(R"(join(",", ["a", "b"], ["c"]))"), "a,b,c");
  EXPECT_EQ(Ok(R"(split(",", "a,b,,c"))"), Json::parse(R"(["a","b","","c"])"));
  EXPECT_EQ(Ok(R"(replace("a-b-c", "-", "+"))"), "a+b+c");
  EXPECT_EQ(Ok(R"(trimspace("  x \n"))"), "x");
  EXPECT_EQ(Ok(R"(trim("?!x!?", "!?"))"), "x");
  EXPECT_EQ(Ok(R"(trimprefix("v1.2", "v"))"), "1.2");
  EXPECT_EQ(Ok(R"(trimsuffix("a.txt", ".txt"))"), "a");
  EXPECT_EQ(Ok(R"(chomp("x\n\n"))"), "x");
  EXPECT_EQ(Ok(R"(substr("héllo", 1, 3))"), "éll");
  EXPECT_EQ(Ok(R"(strrev("abc"))"), "cba");
  EXPECT_EQ(Ok(R"(indent(2, "a\nb"))"), "a\n  b");
  EXPECT_EQ(Ok(R"(startswith("abc", "ab"))"), true);
  EXPECT_EQ(Ok(R"(endswith("abc", "bc"))"), true);
  EXPECT_EQ(Ok(R"(length("héllo"))"), 5);
}

TEST(FunctionsTest, RegularExpressionsUseRe2) {
  EXPECT_EQ(Ok(R"(regex("[a-z]+", "42abc7"))"), "abc");
  EXPECT_EQ(Ok(R"x(regex("([a-z]+)-([0-9]+)", "web-12"))x"), Json::parse(R"(["web","12"])"));
  EXPECT_EQ(Ok(R"x(regex("(?P<app>[a-z]+)-(?P<n>[0-9]+)", "web-12"))x"),
            Json::parse(R"({"app":"web","n":"12"})"));
  EXPECT_EQ(Ok(R"(regexall("[0-9]", "a1b2"))"), Json::parse(R"(["1","2"])"));
  EXPECT_EQ(Ok(R"(regexall("x*", "ab"))"), Json::parse(R"(["","",""])"));  // empty matches end
  EXPECT_EQ(Ok(R"(replace("a1b22c", "/[0-9]+/", "#"))"), "a#b#c");
  // In HCL, ${1} would interpolate: $${1} is the literal Go expansion.
  EXPECT_EQ(Ok(R"x(replace("web-12", "/([a-z]+)-([0-9]+)/", "$2.$${1}$$"))x"), "12.web$");
  // Catastrophic for a backtracking engine; linear for RE2.
  EXPECT_EQ(Ok("length(regexall(\"(a*)*b\", \"" + std::string(20000, 'a') + "\"))"), 0);
}

TEST(FunctionsTest, Collections) {
  EXPECT_EQ(Ok("length([1, 2, 3])"), 3);
  EXPECT_EQ(Ok("concat([1], [2, 3])"), Json::parse("[1,2,3]"));
  EXPECT_EQ(Ok("contains([1, 2], 2)"), true);
  EXPECT_EQ(Ok("keys({b = 1, a = 2})"), Json::parse(R"(["a","b"])"));
  EXPECT_EQ(Ok("values({b = 1, a = 2})"), Json::parse("[2,1]"));
  EXPECT_EQ(Ok(R"(lookup({a = 1}, "b", 7))"), 7);
  EXPECT_EQ(Ok("merge({a = 1, b = 1}, {b = 2})"), Json::parse(R"({"a":1,"b":2})"));
  EXPECT_EQ(Ok("element([1, 2, 3], 4)"), 2);
  EXPECT_EQ(Ok("index([\"a\", \"b\"], \"b\")"), 1);
  EXPECT_EQ(Ok("range(3)"), Json::parse("[0,1,2]"));
  EXPECT_EQ(Ok("range(1, 10, 4)"), Json::parse("[1,5,9]"));
  EXPECT_EQ(Ok("distinct([1, 1, 2])"), Json::parse("[1,2]"));
  EXPECT_EQ(Ok("flatten([[1], [2, [3]]])"), Json::parse("[1,2,3]"));
  EXPECT_EQ(Ok(R"(coalesce("", null, "x"))"), "x");
  EXPECT_EQ(Ok("coalescelist([], [1])"), Json::parse("[1]"));
  EXPECT_EQ(Ok(R"(compact(["a", "", null]))"), Json::parse(R"(["a"])"));
  EXPECT_EQ(Ok("slice([1, 2, 3, 4], 1, 3)"), Json::parse("[2,3]"));
  EXPECT_EQ(Ok("reverse([1, 2])"), Json::parse("[2,1]"));
  EXPECT_EQ(Ok(R"(sort(["b", "a"]))"), Json::parse(R"(["a","b"])"));
  EXPECT_EQ(Ok(R"(zipmap(["a", "b"], [1, 2]))"), Json::parse(R"({"a":1,"b":2})"));
  EXPECT_EQ(Ok("chunklist([1, 2, 3], 2)"), Json::parse("[[1,2],[3]]"));
  EXPECT_EQ(Ok("toset([2, 1, 2])"), Json::parse("[1,2]"));
  EXPECT_EQ(Ok("tostring(5)"), "5");
  EXPECT_EQ(Ok(R"(tonumber("5"))"), 5);
  EXPECT_EQ(Ok(R"(tobool("true"))"), true);
  EXPECT_THAT(Err("range(100000)"), HasSubstr("more than 1024 values"));
}

TEST(FunctionsTest, NumbersEncodingIdsAndTime) {
  EXPECT_EQ(Ok("min(3, 1, 2)"), 1);
  EXPECT_EQ(Ok("max(3, 1, 2)"), 3);
  EXPECT_EQ(Ok("abs(-4)"), 4);
  EXPECT_EQ(Ok("ceil(1.2)"), 2);
  EXPECT_EQ(Ok("floor(1.8)"), 1);
  EXPECT_EQ(Ok("pow(2, 10)"), 1024);
  EXPECT_EQ(Ok("signum(-3)"), -1);
  EXPECT_EQ(Ok(R"(parseint("ff", 16))"), 255);
  EXPECT_EQ(Ok(R"(jsonencode({a = [1, true]}))"), R"({"a":[1,true]})");
  EXPECT_EQ(Ok(R"(jsondecode("{\"a\": 1}").a)"), 1);
  EXPECT_EQ(Ok(R"(base64encode("hello"))"), "aGVsbG8=");
  EXPECT_EQ(Ok(R"(base64decode("aGVsbG8="))"), "hello");
  EXPECT_EQ(Ok(R"(urlencode("a b/c"))"), "a+b%2Fc");
  EXPECT_THAT(Ok("uuidv4()").get<std::string>(),
              MatchesRegex("[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}"));
  EXPECT_THAT(Ok("timestamp()").get<std::string>(),
              MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"));
  EXPECT_EQ(Ok(R"(timeadd("2026-01-01T00:00:00Z", "1h30m"))"), "2026-01-01T01:30:00Z");
}

TEST(FunctionsTest, BadCallsNameTheFunction) {
  EXPECT_EQ(Err("nosuch(1)"),
            "e.hcl:1,1-10: Call to unknown function; There is no function named \"nosuch\".");
  EXPECT_THAT(Err("upper(1, 2)"), HasSubstr("Call to function \"upper\" failed: 1 argument"));
  EXPECT_THAT(Err("lookup({}, \"k\")"), HasSubstr("not in the map"));
  EXPECT_THAT(Err("base64decode(\"%%%\")"), HasSubstr("not valid base64"));
  EXPECT_THAT(Err("jsondecode(\"{\")"), HasSubstr("not valid JSON"));
  EXPECT_THAT(Err(R"(format("%d", "x"))"), HasSubstr("number required"));
  EXPECT_THAT(Err(R"x(regex("(", "x"))x"), HasSubstr("invalid regular expression"));
  EXPECT_THAT(Err(R"(regex("[0-9]", "abc"))"), HasSubstr("did not match"));
}

TEST(FunctionsTest, FilesOnlyWhenAllowed) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("jobspec_eval_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "msg.txt") << "hi\n";
  std::ofstream(dir / "t.tpl") << "name=${name} alloc=${NOMAD_ALLOC_ID} n=${length(items)}\n";
  EvalOptions cli{.allow_fs = true, .base_dir = dir.string()};
  EXPECT_EQ(*Eval(R"(file("msg.txt"))", cli), "hi\n");
  EXPECT_EQ(*Eval(R"(fileexists("msg.txt"))", cli), true);
  EXPECT_EQ(*Eval(R"(templatefile("t.tpl", {name = "web", items = [1, 2]}))", cli),
            "name=web alloc=${NOMAD_ALLOC_ID} n=2\n");
  EXPECT_THAT(Err(R"(file("missing.txt"))", cli), HasSubstr("no file exists at"));
  EXPECT_THAT(Err(R"(templatefile("t.tpl", {}))", cli),
              HasSubstr("t.tpl:1,49-54: Unknown variable; There is no variable named \"items\""));
  // The server's parse endpoint cannot read files.
  EXPECT_THAT(Err(R"(file("msg.txt"))"), HasSubstr("file() is not available here"));
  EXPECT_THAT(Err(R"(templatefile("t.tpl", {}))"), HasSubstr("not available here"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace drover::jobspec

namespace drover::jobspec {
namespace {

TEST(EvalLimitsTest, ExpensiveOrHugeEvaluationsStopWithAnError) {
  // The real budget (kMaxEvalWork) takes seconds to exhaust in a debug build.
  EvalOptions small{.max_work = 100'000};
  EXPECT_THAT(
      Err("[for a in range(1000) : [for b in range(1000) : [for c in range(1000) : 1]]]", small),
      HasSubstr("Evaluation too expensive"));
  EXPECT_THAT(Err(R"(format("%999999999s", "x"))"), HasSubstr("widths and precisions"));
  EXPECT_THAT(Err("jsondecode(\"" + std::string(200, '[') + std::string(200, ']') + "\")"),
              HasSubstr("nests more than 100 levels"));
  // Doubling strings: the size cap stops it long before memory runs out.
  std::string src;
  src += "a0 = \"" + std::string(1024, 'x') + "\"\n";
  for (int i = 1; i < 30; ++i) {
    src += "a" + std::to_string(i) + " = \"${local.a" + std::to_string(i - 1) + "}${local.a" +
           std::to_string(i - 1) + "}\"\n";
  }
  absl::StatusOr<File> f = ParseFile("l.hcl", src);
  ASSERT_TRUE(f.ok());
  Evaluator ev("l.hcl", {});
  for (const Attribute& attr : f->body.attributes) {
    ASSERT_TRUE(ev.AddLocal(attr).ok());
  }
  absl::Status s = ev.EvaluateLocals();
  EXPECT_THAT(s.message(), HasSubstr("Value too large"));
}

TEST(EvalLimitsTest, LocalChainsAreCapped) {
  std::string src;
  for (int i = 0; i < 500; ++i) {
    src += "l" + std::to_string(i) + " = local.l" + std::to_string(i + 1) + "\n";
  }
  src += "l500 = 1\n";
  absl::StatusOr<File> f = ParseFile("l.hcl", src);
  ASSERT_TRUE(f.ok());
  Evaluator ev("l.hcl", {});
  for (const Attribute& attr : f->body.attributes) {
    ASSERT_TRUE(ev.AddLocal(attr).ok());
  }
  EXPECT_THAT(ev.EvaluateLocals().message(), HasSubstr("Local values nest too deeply"));
}

}  // namespace
}  // namespace drover::jobspec

namespace drover::jobspec {
namespace {

TEST(ReviewRegressionTest, NumbersAtTheEdges) {
  EXPECT_EQ(Ok("length(range(1e18, 1e18 + 1024))"), 1024);  // used to loop forever
  EXPECT_EQ(Ok("ceil(1e300)"), 1e300);
  EXPECT_EQ(Ok("floor(-1e300)"), -1e300);
  EXPECT_EQ(Ok(R"(substr("abc", 1, 9223372036854775807))"), "bc");
  EXPECT_EQ(Ok(R"("x${1e20}")"), "x100000000000000000000");
  EXPECT_EQ(Ok(R"(title("hello-world foo_bar"))"), "Hello-World Foo_bar");
  EXPECT_THAT(Err(R"(base64decode("/w=="))"), HasSubstr("not valid UTF-8"));
}

TEST(ReviewRegressionTest, ResultsAreSizedBeforeTheyAreBuilt) {
  const std::string big = "\"" + std::string(100000, ' ') + "\"";
  EXPECT_THAT(Err("replace(" + big + ", \" \", " + big + ")"), HasSubstr("the result would be"));
  EXPECT_THAT(Err("indent(1000, join(\"\\n\", concat(range(1024), range(1024), range(1024), "
                  "range(1024), range(1024))))"),
              HasSubstr("the result would be"));
  EXPECT_THAT(Err("join(" + big + ", range(1000))"), HasSubstr("the result would be"));
}

TEST(ReviewRegressionTest, ForVariablesMayBeCalledVarOrLocal) {
  EXPECT_EQ(Ok("[for var in [{x = 1}] : var.x]"), Json::parse("[1]"));
  EXPECT_EQ(Ok("[for local in [{x = 2}] : local.x]"), Json::parse("[2]"));
}

TEST(ReviewRegressionTest, DeepValuesAndDeepEvaluationStop) {
  // Each local nests 90 levels around the previous one; no single expression is deep.
  std::string src;
  for (int i = 0; i < 20; ++i) {
    src += "a" + std::to_string(100 + i) + " = " + std::string(90, '[') +
           (i == 0 ? std::string("1") : "local.a" + std::to_string(99 + i)) + std::string(90, ']') +
           "\n";
  }
  absl::StatusOr<File> f = ParseFile("d.hcl", src);
  ASSERT_TRUE(f.ok()) << f.status();
  Evaluator ev("d.hcl", {});
  for (const Attribute& attr : f->body.attributes) {
    ASSERT_TRUE(ev.AddLocal(attr).ok());
  }
  EXPECT_THAT(ev.EvaluateLocals().message(), HasSubstr("Value nests too deeply"));
}

}  // namespace
}  // namespace drover::jobspec
