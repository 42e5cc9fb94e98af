/* A LiteRT delegate plugin for the tests: it claims no operator, and its Prepare allocates and
 * touches `hold_bytes` bytes (an option) that it keeps until it is destroyed, as a GPU/NPU
 * delegate keeps its own buffers. `fail=1` makes tflite_plugin_create_delegate return NULL.
 * The TfLiteDelegate layout is tflite/core/c/common.h's (LP64). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct TfLiteDelegate {
  void* data_;
  int (*Prepare)(void* context, struct TfLiteDelegate* delegate);
  void* CopyFromBufferHandle;
  void* CopyToBufferHandle;
  void* FreeBufferHandle;
  long long flags;
  void* opaque_delegate_builder;
} TfLiteDelegate;

typedef struct { size_t hold; void* buffer; } Held;

static int prepare(void* context, TfLiteDelegate* delegate) {
  (void)context;
  Held* h = (Held*)delegate->data_;
  if (h->hold && !h->buffer) {
    h->buffer = malloc(h->hold);
    if (!h->buffer) return 1;
    memset(h->buffer, 1, h->hold);
  }
  return 0; /* kTfLiteOk: no node replaced */
}

TfLiteDelegate* tflite_plugin_create_delegate(char** keys, char** values, size_t n,
                                              void (*report_error)(const char*)) {
  Held* h = (Held*)calloc(1, sizeof(Held));
  for (size_t i = 0; i < n; ++i) {
    if (!strcmp(keys[i], "hold_bytes")) h->hold = (size_t)strtoull(values[i], NULL, 10);
    if (!strcmp(keys[i], "fail") && !strcmp(values[i], "1")) {
      if (report_error) report_error("hold_delegate: asked to fail (fail=1)");
      free(h);
      return NULL;
    }
  }
  TfLiteDelegate* d = (TfLiteDelegate*)calloc(1, sizeof(TfLiteDelegate));
  d->data_ = h;
  d->Prepare = prepare;
  return d;
}

void tflite_plugin_destroy_delegate(TfLiteDelegate* d) {
  if (!d) return;
  Held* h = (Held*)d->data_;
  free(h->buffer);
  free(h);
  free(d);
}
