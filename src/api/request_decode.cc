#include "api/request_decode.h"

#include <cctype>

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

namespace drover::api {

Request DecodeRequest(std::string method, const std::string& target,
                      const std::vector<std::pair<std::string, std::string>>& headers,
                      std::string body) {
  Request req;
  req.method = std::move(method);
  req.body = std::move(body);
  for (const auto& [field, value] : headers) {
    std::string name = field;
    for (char& c : name)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    req.headers[name] = value;
  }
  auto parsed = boost::urls::parse_origin_form(target);
  if (!parsed) {
    req.path = target;
    return req;
  }
  // Routed by segment as sent, each decoded on its own: "/v1/job/a%2Fb" is job "a/b".
  req.raw_path = std::string(parsed->encoded_path());
  req.path = std::string(parsed->path());
  for (const auto& param : parsed->params()) {
    req.query[std::string(param.key)] = param.has_value ? std::string(param.value) : "";
    req.query_list.emplace_back(std::string(param.key),
                                param.has_value ? std::string(param.value) : "");
  }
  return req;
}

}  // namespace drover::api
