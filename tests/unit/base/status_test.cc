#include "gpuprof/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <utility>

namespace gpuprof {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kOk);
  EXPECT_EQ(status.message(), "");
  EXPECT_EQ(status.ToString(), "OK");
  EXPECT_EQ(status, OkStatus());
  EXPECT_EQ(status, Status::Ok());
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status status = NotFoundError("no allocation at 0x1000");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_EQ(status.message(), "no allocation at 0x1000");
  EXPECT_EQ(status.ToString(), "NOT_FOUND: no allocation at 0x1000");
}

TEST(StatusTest, FactoryFunctionsSetTheirCode) {
  EXPECT_EQ(InvalidArgumentError("m").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(NotFoundError("m").code(), StatusCode::kNotFound);
  EXPECT_EQ(AlreadyExistsError("m").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(FailedPreconditionError("m").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(ResourceExhaustedError("m").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(DeadlineExceededError("m").code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(UnavailableError("m").code(), StatusCode::kUnavailable);
  EXPECT_EQ(AbortedError("m").code(), StatusCode::kAborted);
  EXPECT_EQ(DataLossError("m").code(), StatusCode::kDataLoss);
  EXPECT_EQ(InternalError("m").code(), StatusCode::kInternal);
  EXPECT_EQ(UnimplementedError("m").code(), StatusCode::kUnimplemented);
}

TEST(StatusTest, EveryCodeHasADistinctName) {
  std::set<std::string_view> names;
  for (int i = static_cast<int>(StatusCode::kOk); i <= static_cast<int>(StatusCode::kUnimplemented); ++i) {
    std::string_view name = StatusCodeName(static_cast<StatusCode>(i));
    EXPECT_NE(name, "UNKNOWN") << "code " << i;
    names.insert(name);
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(StatusCode::kUnimplemented) + 1);
  EXPECT_EQ(StatusCodeName(StatusCode::kResourceExhausted), "RESOURCE_EXHAUSTED");
}

TEST(StatusTest, EqualityComparesCodeAndMessage) {
  EXPECT_EQ(InternalError("a"), InternalError("a"));
  EXPECT_FALSE(InternalError("a") == InternalError("b"));
  EXPECT_FALSE(InternalError("a") == DataLossError("a"));
}

TEST(StatusTest, WithContextPrefixesMessageAndKeepsCode) {
  Status status = DataLossError("short read").WithContext("copy 0x1000+4096").WithContext("snapshot");
  EXPECT_EQ(status.code(), StatusCode::kDataLoss);
  EXPECT_EQ(status.message(), "snapshot: copy 0x1000+4096: short read");
}

TEST(StatusTest, WithContextOnOkIsOk) {
  Status status = OkStatus().WithContext("anything");
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.message(), "");
}

TEST(StatusTest, WithContextLeavesOriginalUnchanged) {
  Status original = AbortedError("stopped");
  Status with_context = original.WithContext("session");
  EXPECT_EQ(original.message(), "stopped");
  EXPECT_EQ(with_context.message(), "session: stopped");
}

TEST(StatusOrTest, HoldsValue) {
  StatusOr<int> result(42);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result.status().ok());
  EXPECT_EQ(result.value(), 42);
  EXPECT_EQ(*result, 42);
  EXPECT_EQ(result.value_or(7), 42);
}

TEST(StatusOrTest, HoldsError) {
  StatusOr<int> result(NotFoundError("missing"));
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.status(), NotFoundError("missing"));
  EXPECT_EQ(result.value_or(7), 7);
}

TEST(StatusOrTest, FromOkStatusBecomesInternalError) {
  StatusOr<int> result(OkStatus());
  EXPECT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kInternal);
  EXPECT_NE(result.status().message().find("OK Status"), std::string::npos) << result.status().message();

  Status ok = OkStatus();
  StatusOr<std::string> from_lvalue(ok);
  EXPECT_EQ(from_lvalue.status().code(), StatusCode::kInternal);
}

TEST(StatusOrTest, HoldsMoveOnlyValue) {
  StatusOr<std::unique_ptr<int>> result(std::make_unique<int>(5));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(**result, 5);
  std::unique_ptr<int> taken = std::move(result).value();
  ASSERT_NE(taken, nullptr);
  EXPECT_EQ(*taken, 5);
}

TEST(StatusOrTest, ArrowAndMutableAccess) {
  StatusOr<std::string> result(std::string("abc"));
  EXPECT_EQ(result->size(), 3u);
  result.value() += "d";
  *result += "e";
  EXPECT_EQ(*result, "abcde");
}

TEST(StatusOrTest, MovedStatusOfErrorKeepsIt) {
  StatusOr<int> result(UnavailableError("cupti slot taken"));
  Status status = std::move(result).status();
  EXPECT_EQ(status, UnavailableError("cupti slot taken"));
}

TEST(StatusOrDeathTest, ValueOfErrorAborts) {
  StatusOr<int> result(NotFoundError("no such kernel"));
  EXPECT_DEATH(static_cast<void>(result.value()),
               "FATAL: value\\(\\) of a StatusOr holding an error: NOT_FOUND: no such kernel");
}

// --- GPUPROF_RETURN_IF_ERROR / GPUPROF_ASSIGN_OR_RETURN ---------------------------------------

Status ReturnIfError(const Status& first, int* reached, int* evaluations) {
  auto evaluate = [&] {
    ++*evaluations;
    return first;
  };
  GPUPROF_RETURN_IF_ERROR(evaluate());
  ++*reached;
  return OkStatus();
}

TEST(StatusMacrosTest, ReturnIfErrorContinuesOnOk) {
  int reached = 0;
  int evaluations = 0;
  EXPECT_TRUE(ReturnIfError(OkStatus(), &reached, &evaluations).ok());
  EXPECT_EQ(reached, 1);
  EXPECT_EQ(evaluations, 1);
}

TEST(StatusMacrosTest, ReturnIfErrorReturnsTheErrorOnceEvaluated) {
  int reached = 0;
  int evaluations = 0;
  EXPECT_EQ(ReturnIfError(AbortedError("x"), &reached, &evaluations), AbortedError("x"));
  EXPECT_EQ(reached, 0);
  EXPECT_EQ(evaluations, 1);
}

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

// Two GPUPROF_ASSIGN_OR_RETURN in one scope, one declaring and one assigning.
StatusOr<int> Quarter(int x, int* reached) {
  GPUPROF_ASSIGN_OR_RETURN(int half, Half(x));
  int quarter = 0;
  GPUPROF_ASSIGN_OR_RETURN(quarter, Half(half));
  ++*reached;
  return quarter;
}

TEST(StatusMacrosTest, AssignOrReturnAssignsValue) {
  int reached = 0;
  StatusOr<int> result = Quarter(12, &reached);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(*result, 3);
  EXPECT_EQ(reached, 1);
}

TEST(StatusMacrosTest, AssignOrReturnReturnsFirstError) {
  int reached = 0;
  EXPECT_EQ(Quarter(7, &reached).status(), InvalidArgumentError("odd: 7"));
  EXPECT_EQ(Quarter(6, &reached).status(), InvalidArgumentError("odd: 3"));
  EXPECT_EQ(reached, 0);
}

StatusOr<std::unique_ptr<int>> MakeBox(bool fail) {
  if (fail) return ResourceExhaustedError("no memory");
  return std::make_unique<int>(9);
}

Status UnboxInto(bool fail, int* out) {
  GPUPROF_ASSIGN_OR_RETURN(std::unique_ptr<int> box, MakeBox(fail));
  *out = *box;
  return OkStatus();
}

TEST(StatusMacrosTest, AssignOrReturnMovesMoveOnlyValuesIntoAStatusFunction) {
  int out = 0;
  EXPECT_TRUE(UnboxInto(false, &out).ok());
  EXPECT_EQ(out, 9);
  EXPECT_EQ(UnboxInto(true, &out), ResourceExhaustedError("no memory"));
}

}  // namespace
}  // namespace gpuprof
