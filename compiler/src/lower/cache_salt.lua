-- tenantc: the prefix-cache partition of one tenant of a shared model (docs/serving.md).
-- Envoy runs this on the tenant's route only. It sets the request body's top-level
-- "cache_salt" to the tenant's value and refuses a request that sets one itself.
local SALT = "@SALT@"

local function refuse(handle, message)
  handle:respond(
    { [":status"] = "400", ["content-type"] = "application/json" },
    '{"error":{"type":"invalid_request_error","message":"' .. message .. '"}}'
  )
end

-- The index just past the JSON string whose opening quote is at i, or nil if it never ends.
local function skip_string(s, i)
  local j = i + 1
  while true do
    local k = string.find(s, '["\\]', j)
    if k == nil then
      return nil
    end
    if string.byte(s, k) == 34 then
      return k + 1
    end
    j = k + 2
  end
end

local ESCAPES = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

-- The JSON string at i decoded (a character above U+007F becomes "?", which no key compared
-- here contains), and the index past it; nil if it is malformed.
local function read_string(s, i)
  local parts = {}
  local j = i + 1
  while true do
    local k = string.find(s, '["\\]', j)
    if k == nil then
      return nil
    end
    parts[#parts + 1] = string.sub(s, j, k - 1)
    if string.byte(s, k) == 34 then
      return table.concat(parts), k + 1
    end
    local escape = string.sub(s, k + 1, k + 1)
    if escape == "u" then
      local hex = string.sub(s, k + 2, k + 5)
      if not string.find(hex, "^%x%x%x%x$") then
        return nil
      end
      local code = tonumber(hex, 16)
      parts[#parts + 1] = code < 128 and string.char(code) or "?"
      j = k + 6
    else
      local decoded = ESCAPES[escape]
      if decoded == nil then
        return nil
      end
      parts[#parts + 1] = decoded
      j = k + 2
    end
  end
end

-- Checks that s is one JSON object and that none of its own keys is "cache_salt" (however it
-- is escaped). Returns the index of the object's closing brace and whether it has members, or
-- nil and the reason.
local function top_level(s)
  if string.find(s, "\0", 1, true) then
    return nil, "the request body must be UTF-8 JSON"
  end
  local i = string.find(s, "%S")
  if i == nil or string.byte(s, i) ~= 123 then
    return nil, "the request body must be a JSON object"
  end
  -- The brackets still open, innermost last; a closing bracket must match its opening one.
  local open, depth, members, key_next = {}, 0, false, false
  while true do
    i = string.find(s, '[{}%[%],"]', i)
    if i == nil then
      return nil, "the request body is not complete JSON"
    end
    local c = string.byte(s, i)
    if c == 34 then
      if depth == 1 and key_next then
        local key, after = read_string(s, i)
        if key == nil then
          return nil, "the request body has a malformed string"
        end
        if key == "cache_salt" then
          return nil, "cache_salt is set by the gateway"
        end
        members, key_next, i = true, false, after
      else
        i = skip_string(s, i)
        if i == nil then
          return nil, "the request body has a malformed string"
        end
      end
    else
      if c == 123 or c == 91 then
        depth = depth + 1
        open[depth] = c + 2
        key_next = depth == 1
      elseif c == 125 or c == 93 then
        if open[depth] ~= c then
          return nil, "the request body has unbalanced brackets"
        end
        depth = depth - 1
        if depth == 0 then
          if string.find(s, "%S", i + 1) then
            return nil, "the request body has data after its JSON object"
          end
          return i, members
        end
      elseif depth == 1 then
        key_next = true
      end
      i = i + 1
    end
  end
end

function envoy_on_request(handle)
  local body = handle:body()
  if body == nil then
    return
  end
  local s = body:getBytes(0, body:length())
  local close, members = top_level(s)
  if close == nil then
    refuse(handle, members)
    return
  end
  local separator = members and "," or ""
  body:setBytes(string.sub(s, 1, close - 1) .. separator .. '"cache_salt":"' .. SALT .. '"}')
end
