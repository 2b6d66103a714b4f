/* Command defineCourse of the DCB example "course subscriptions"
 * (tests/fixtures/dcb-examples/course-subscriptions.json, block course_subscription_01):
 * a course id is defined once. Module define-course, version 1.0.0.
 *
 * Input: {"courseId": text, "capacity": number}.
 * Decision model courseExists(courseId) (course_models.h).
 * Rejects "Course with id \"{courseId}\" already exists"; otherwise appends CourseDefined
 * {"courseId", "capacity" (as given: an int stays an int)} tagged course:{courseId}. */
#include "course_models.h"

static reef_cbor init(reef_cbor input, reef_writer* query) {
  dcb_input in = dcb_input_of(input);
  dcb_model model = course_exists(dcb_input_text(&in, "courseId"));
  return dcb_init(&in, &model, 1, query);
}

static reef_cbor fold(reef_cbor state, reef_cbor input, const reef_event* event) {
  dcb_input in = dcb_input_of(input);
  dcb_model model = course_exists(dcb_input_text(&in, "courseId"));
  return dcb_fold(state, &model, 1, event);
}

static reef_cbor decide(reef_cbor state, reef_cbor input) {
  dcb_input in = dcb_input_of(input);
  reef_str course_id = dcb_input_text(&in, "courseId");
  reef_cbor capacity;
  dcb_input_number(&in, "capacity", &capacity);
  if (in.error.len > 0) return dcb_reject_input(&in);
  if (dcb_state_bool(state, "courseExists")) {
    return reef_reject("Course with id \"%.*s\" already exists", (int)course_id.len, course_id.ptr);
  }
  reef_writer data = reef_writer_new();
  reef_write_record(&data, 2);
  reef_write_cstr(&data, "courseId");
  reef_write_str(&data, course_id);
  reef_write_cstr(&data, "capacity");
  reef_write_cbor(&data, capacity);
  reef_str tags[] = {course_tag(course_id)};
  return reef_accept("CourseDefined", 1, tags, reef_writer_finish(&data));
}

REEF_COMMAND(init, fold, decide);
