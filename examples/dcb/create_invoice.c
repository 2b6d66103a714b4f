/* Command createInvoice of the DCB example "invoice number"
 * (tests/fixtures/dcb-examples/invoice-number.json): invoice numbers are consecutive and
 * unique, without gaps. Module create-invoice, version 1.0.0.
 *
 * Input: {"invoiceData": object}.
 * Decision model nextInvoiceNumber: 1, then `event.data.invoiceNumber + 1` per InvoiceCreated
 * (every one: the model has no tag filter, so the query is the type alone).
 * Never rejects; appends InvoiceCreated {"invoiceNumber": next, "invoiceData": the input's}
 * tagged invoice:{invoiceNumber}. Two concurrent executions read the same last invoice; the
 * append condition lets only one of them append. */
#include "dcb.h"

/* `event.data.invoiceNumber + 1`. */
static reef_cbor invoice_created(reef_cbor state, const reef_event* event, const dcb_model* model) {
  (void)state;
  (void)model;
  return dcb_number_value(dcb_number_add(dcb_data_number(event, "invoiceNumber"), 1));
}

static const dcb_handler kNextInvoiceNumber[] = {
    {"InvoiceCreated", invoice_created},
};

static dcb_model next_invoice_number(void) {
  dcb_model model = {
      .name = "nextInvoiceNumber",
      .initial = reef_value_int(1),
      .handlers = kNextInvoiceNumber,
      .handler_count = 1,
  };
  return model;
}

static reef_cbor init(reef_cbor input, reef_writer* query) {
  dcb_input in = dcb_input_of(input);
  dcb_input_record(&in, "invoiceData");
  dcb_model model = next_invoice_number();
  return dcb_init(&in, &model, 1, query);
}

static reef_cbor fold(reef_cbor state, reef_cbor input, const reef_event* event) {
  (void)input;
  dcb_model model = next_invoice_number();
  return dcb_fold(state, &model, 1, event);
}

static reef_cbor decide(reef_cbor state, reef_cbor input) {
  dcb_input in = dcb_input_of(input);
  reef_cbor invoice_data = dcb_input_record(&in, "invoiceData");
  if (in.error.len > 0) return dcb_reject_input(&in);
  dcb_number number = dcb_state_number(state, "nextInvoiceNumber");
  reef_writer data = reef_writer_new();
  reef_write_record(&data, 2);
  reef_write_cstr(&data, "invoiceNumber");
  dcb_write_number(&data, number);
  reef_write_cstr(&data, "invoiceData");
  reef_write_cbor(&data, invoice_data);
  reef_str tags[] = {dcb_tag("invoice:", dcb_number_text(number))};
  return reef_accept("InvoiceCreated", 1, tags, reef_writer_finish(&data));
}

REEF_COMMAND(init, fold, decide);
