/* wings.c - the service is the core (core/) and these wings, opened in this order: the encode
 * wing (encode/: POST /v1/encode, GET /v1/info) always, the chat wing (chat/: POST
 * /v1/chat/completions, GET /v1/models) with --lm, the chat page (webui/: GET /) with --lm
 * unless --no-webui. The order is that of GET /metrics' lines and
 * of the endpoints in the 404 text. A new wing: its folder, its svc_wing, one line here. */
#include "chat/chat_wing.h"
#include "encode/encode_wing.h"
#include "webui/webui_wing.h"

const svc_wing *const svc_wings[] = {&svc_encode_wing, &svc_chat_wing, &svc_webui_wing,
                                     NULL};
