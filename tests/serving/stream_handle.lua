-- A stand-in for the stream handle Envoy's Lua HTTP filter gives envoy_on_request, for
-- tests/cache_salt.rs. It models what the cache-salt filter relies on, as Envoy documents and
-- implements it (source/extensions/filters/common/lua/wrappers.cc, filters/http/lua):
--   handle:body()            nil when the request has no body (an empty body is none: the
--                            headers end the stream), else the whole buffered body;
--   buffer:length()          its size in bytes;
--   buffer:getBytes(i, n)    n bytes from offset i (0-based); an error if i + n > length;
--   buffer:setBytes(s)       replaces the body and sets content-length to its new size;
--   handle:headers()         get / replace / add / remove of request headers;
--   handle:respond(h, b)     a local reply; the request never reaches the upstream.
-- Usage: luajit stream_handle.lua SCRIPT BODY_IN|- BODY_OUT [validator]
-- Prints one line: "forwarded", "forwarded-unchanged", "responded <status> <body>" or
-- "error <message>" (a Lua error: Envoy would log it and let the request through).
-- With "validator", the buffer behaves like Envoy Gateway's validation mocks instead: a fixed
-- length of 10 and fixed bytes whatever is asked.
local script_path, body_in, body_out, mode = arg[1], arg[2], arg[3], arg[4]

local function read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local headers = { [":method"] = "POST", [":path"] = "/v1/completions", ["content-type"] = "application/json" }
local body = nil
if body_in ~= "-" then
  body = read_file(body_in)
  headers["content-length"] = tostring(#body)
end

local changed, responded = false, nil

local Buffer = {}
Buffer.__index = Buffer
function Buffer:length()
  if mode == "validator" then
    return 10
  end
  return #body
end
function Buffer:getBytes(index, length)
  if mode == "validator" then
    return "example_bytes"
  end
  if index < 0 or length < 0 or index + length > #body then
    error("index/length must be >= 0 and (index + length) must be <= buffer size")
  end
  return string.sub(body, index + 1, index + length)
end
function Buffer:setBytes(s)
  body = s
  headers["content-length"] = tostring(#s)
  changed = true
  return #s
end

local Headers = {}
Headers.__index = Headers
function Headers:get(name)
  return headers[string.lower(name)]
end
function Headers:replace(name, value)
  headers[string.lower(name)] = value
end
function Headers:add(name, value)
  headers[string.lower(name)] = value
end
function Headers:remove(name)
  headers[string.lower(name)] = nil
end

local Handle = {}
Handle.__index = Handle
function Handle:body()
  if body == nil or #body == 0 then
    return nil
  end
  return setmetatable({}, Buffer)
end
function Handle:headers()
  return setmetatable({}, Headers)
end
function Handle:respond(h, b)
  if type(h[":status"]) ~= "string" then
    error("respond needs a :status header")
  end
  responded = h[":status"] .. " " .. (b or "")
end
function Handle:logInfo(_) end
function Handle:logWarn(_) end
function Handle:logErr(_) end

local chunk, load_error = loadfile(script_path)
if chunk == nil then
  print("error " .. load_error)
  os.exit(0)
end
local ok, run_error = pcall(function()
  chunk()
  envoy_on_request(setmetatable({}, Handle))
end)
if not ok then
  print("error " .. tostring(run_error))
elseif responded ~= nil then
  print("responded " .. responded)
else
  if changed then
    if headers["content-length"] ~= tostring(#body) then
      print("error content-length " .. headers["content-length"] .. " for " .. #body .. " bytes")
      os.exit(0)
    end
    print("forwarded")
  else
    print("forwarded-unchanged")
  end
  if body ~= nil then
    local f = assert(io.open(body_out, "wb"))
    f:write(body)
    f:close()
  end
end
